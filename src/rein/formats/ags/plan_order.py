"""The structure of one scope as a plan and the engine read it: merged nodes, edges, order.

Three pure functions the planner (:mod:`rein.formats.ags.plan`) and the engine's scope model
(:mod:`rein.engine.run.graph`) share, so that the order a plan shows is the order a run follows:

* :func:`effective_node`: a node with ``defaults`` merged in (§6.3);
* :func:`effective_edges`: explicit edges ∪ ``depends_on``, deduplicated on
  ``(from, to, kind, when)`` (§8.4);
* :func:`topological_order`: the canonical order (Kahn's algorithm with the ready queue
  ordered by declaration index, §17.4) and the parallel groups (topological levels).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from typing import Any

from rein.formats.ags.plan_model import EdgePlan
from rein.formats.pointers import escape

MERGED_BLOCKS = ("intelligence", "requirements", "constraints", "failure")


def effective_node(
    node: Mapping[str, Any], defaults: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The node as the engine sees it: ``defaults`` merged in per AGS §6.3.

    Per block, shallow: the node's keys win over the default block's keys; arrays are
    replaced, never concatenated; ``human`` and ``join`` are taken whole. A gate does not
    inherit ``intelligence``: it never calls a model and may not declare one (AG102).
    """
    out = dict(node)
    if not defaults:
        return out
    for block in MERGED_BLOCKS:
        if block == "intelligence" and node.get("type") == "gate":
            continue
        base = defaults.get(block)
        if isinstance(base, Mapping):
            own = node.get(block)
            out[block] = {**base, **own} if isinstance(own, Mapping) else dict(base)
    for whole in ("human", "join"):
        if whole not in node and whole in defaults:
            out[whole] = defaults[whole]
    return out


def effective_edges(fragment: Mapping[str, Any], pointer: str = "") -> list[EdgePlan]:
    """Explicit edges ∪ ``depends_on`` of one scope, deduplicated on (from, to, kind, when).

    ``depends_on`` edges come first (in node declaration order), then explicit edges; the
    first declaration of a duplicate wins. Edges naming unknown nodes are dropped (the
    validator reports them).
    """
    nodes = fragment.get("nodes") or {}
    seen: set[tuple[str, str, str, str | None]] = set()
    out: list[EdgePlan] = []

    def add(edge: EdgePlan) -> None:
        key = (edge.source, edge.target, edge.kind, edge.when)
        if key not in seen and edge.source in nodes and edge.target in nodes:
            seen.add(key)
            out.append(edge)

    for node_id, node in nodes.items():
        for dep in (node.get("depends_on") or []) if isinstance(node, Mapping) else []:
            add(EdgePlan(source=dep, target=node_id, kind="sequence", origin="depends_on",
                         pointer=f"{pointer}/nodes/{escape(node_id)}/depends_on"))
    for i, edge in enumerate(fragment.get("edges") or []):
        if isinstance(edge, Mapping):
            add(EdgePlan(source=edge.get("from", ""), target=edge.get("to", ""),
                         kind=edge.get("kind", "sequence"), when=edge.get("when"),
                         label=edge.get("label"), pointer=f"{pointer}/edges/{i}"))
    return out


def topological_order(
    ids: Iterable[str], edges: Iterable[EdgePlan]
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """Canonical order and parallel groups of one scope (AGS §17.4).

    Kahn's algorithm whose ready queue is ordered by declaration index; a node's group is
    its topological level (longest path from a node without predecessors), and each group
    lists its nodes in declaration order. Nodes on a cycle (an invalid document) are
    appended in declaration order as one last group rather than dropped.
    """
    index = {node_id: i for i, node_id in enumerate(ids)}
    names = list(index)
    indegree = dict.fromkeys(names, 0)
    successors: dict[str, list[str]] = {n: [] for n in names}
    for e in edges:
        if e.source in index and e.target in index:
            successors[e.source].append(e.target)
            indegree[e.target] += 1
    level = dict.fromkeys(names, 0)
    ready = [index[n] for n in names if indegree[n] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = names[heapq.heappop(ready)]
        order.append(node)
        for nxt in successors[node]:
            level[nxt] = max(level[nxt], level[node] + 1)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                heapq.heappush(ready, index[nxt])
    levels: dict[int, list[str]] = {}
    for node in order:
        levels.setdefault(level[node], []).append(node)
    groups = [tuple(sorted(levels[k], key=index.__getitem__)) for k in sorted(levels)]
    done = set(order)
    stuck = [n for n in names if n not in done]
    if stuck:
        order.extend(stuck)
        groups.append(tuple(stuck))
    return tuple(order), tuple(groups)
