"""The engine's view of one scope: merged nodes, effective edges, and the scheduling rank.

A scope is the root graph or a fragment (loop/map body, inline or named subgraph). It is
computed once per fragment and shared by every instance of it (every loop iteration and map
item), so a 200-item map does not re-derive its body 200 times. A process keeps the models
of the last :data:`SCOPE_MODELS_KEPT` fragments it was asked about, and no more: a
long-lived process advances run after run, each from a freshly read graph, and the models
(with the fragments they hold) of runs long gone are let go.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen
from rein.core.tiers import TIERS
from rein.formats.ags.plan_model import EdgePlan
from rein.formats.ags.plan_order import effective_edges, effective_node, topological_order
from rein.formats.ags.spec import NodeSpec, node_spec


class Edge(Frozen):
    """One member of the effective edge set, numbered within its scope."""

    index: int
    source: str
    target: str
    kind: str  # sequence | conditional | on_failure
    when: str | None
    label: str | None


class ScopeModel(Frozen):
    """A scope ready to schedule."""

    fragment: Mapping[str, Any]  # the raw graph or fragment
    nodes: Mapping[str, Mapping[str, Any]]  # node id → node with defaults merged (§6.3)
    specs: Mapping[str, NodeSpec]  # node id → its typed spec, AGS defaults applied
    edges: tuple[Edge, ...]
    incoming: Mapping[str, tuple[Edge, ...]]
    outgoing: Mapping[str, tuple[Edge, ...]]
    rank: Mapping[str, int]  # canonical topological position (ties by declaration order)
    entrypoints: tuple[str, ...]

    def node_type(self, node_id: str) -> str:
        return self.specs[node_id].type


# More than the fragments one run has in use at a time (a graph, the bodies of the loops and
# maps it runs, the subgraphs): a fragment evicted is only derived again.
SCOPE_MODELS_KEPT = 32
# A scope of this many nodes and more is derived with the collector paused
# (rein.core.collector); a driver turn's scopes are smaller and do not import it.
LARGE_SCOPE = 500

# id(fragment) → (the fragment, its model), least recently used first. The fragment is held
# so that its id is not reused while the entry lives. Locked: the web console reads records
# (which read models) in one thread while its loop runs the engine in another.
_CACHE: dict[int, tuple[Mapping[str, Any], ScopeModel]] = {}
_LOCK = threading.Lock()


def scope_model(fragment: Mapping[str, Any]) -> ScopeModel:
    """The model of ``fragment``; root ``defaults`` apply only where they are declared."""
    key = id(fragment)
    with _LOCK:
        hit = _CACHE.pop(key, None)
        if hit is not None and hit[0] is fragment:
            _CACHE[key] = hit  # now the most recently used
            return hit[1]
    nodes = fragment.get("nodes")
    if isinstance(nodes, Mapping) and len(nodes) >= LARGE_SCOPE:
        from rein.core.collector import paused

        with paused():  # a node, a spec and edges per node: none of it garbage
            model = _derive(fragment)
    else:
        model = _derive(fragment)
    with _LOCK:
        _CACHE[key] = (fragment, model)
        while len(_CACHE) > SCOPE_MODELS_KEPT:
            del _CACHE[next(iter(_CACHE))]
    return model


def _derive(fragment: Mapping[str, Any]) -> ScopeModel:
    defaults = fragment.get("defaults")
    raw_nodes: Mapping[str, Any] = fragment.get("nodes") or {}
    nodes = {nid: effective_node(n, defaults) for nid, n in raw_nodes.items()}
    plans: list[EdgePlan] = effective_edges(fragment)
    edges = tuple(
        Edge(index=i, source=e.source, target=e.target, kind=e.kind, when=e.when,
             label=e.label)
        for i, e in enumerate(plans)
    )
    incoming: dict[str, list[Edge]] = {n: [] for n in nodes}
    outgoing: dict[str, list[Edge]] = {n: [] for n in nodes}
    for e in edges:
        incoming[e.target].append(e)
        outgoing[e.source].append(e)
    order, _ = topological_order(list(nodes), plans)
    model = ScopeModel(
        fragment=fragment,
        nodes=nodes,
        specs={nid: node_spec(nid, n) for nid, n in nodes.items()},
        edges=edges,
        incoming={k: tuple(v) for k, v in incoming.items()},
        outgoing={k: tuple(v) for k, v in outgoing.items()},
        rank={n: i for i, n in enumerate(order)},
        entrypoints=tuple(fragment.get("entrypoints") or ()),
    )
    return model


def node_tier(node: Mapping[str, Any]) -> str:
    """The requested tier; a node without ``intelligence`` asks for ``standard``."""
    intel = node.get("intelligence")
    if isinstance(intel, Mapping) and intel.get("tier") in TIERS:
        return str(intel["tier"])
    return "standard"


def tier_above(tier: str) -> str:
    """One tier up, clamped at ``frontier``."""
    i = TIERS.index(tier) if tier in TIERS else 1
    return TIERS[min(i + 1, len(TIERS) - 1)]
