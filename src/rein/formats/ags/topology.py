"""Layer 2, per scope: the effective edge set and what follows from it.

Effective edges = explicit edges ∪ one ``sequence`` edge per ``depends_on`` entry, deduplicated
on ``(from, to, kind, when)`` (§8.3). From it: unknown ids (AG113, AG114, AG115, AG133),
entrypoints with incoming edges (AG112), cycles (AG111, with the path), impossible ``n_of``
joins (AG116), unreachable nodes (AG903), and redundant ``depends_on`` (AG901).

Everything is linear in nodes + edges. The dataflow rule AG201 asks whether a node runs before
another; most reads are of a direct predecessor, answered from the edges. Only a read of a
farther node folds the transitive predecessors, as bitsets (Python ints, one bit per node)
along a topological order, once per scope: they take n² bits (1.25 GB at 100,000 nodes), so a
graph whose nodes read only their direct predecessors never builds them
(``tests/ags/test_topology_closure.py``).
"""

from __future__ import annotations

import heapq

from rein.core.frozen import Frozen
from rein.formats.ags.report import Collector, near
from rein.formats.ags.scopes import Scope, list_of

Edge = tuple[str, str, str, str | None]  # from, to, kind, when


class Topology(Frozen):
    """The effective edge set of one scope and its derived facts."""

    edges: tuple[Edge, ...]
    index: dict[str, int]  # node id → declaration index (its bit in the closure)
    order: tuple[str, ...]  # topological order, ties by declaration order (empty if cyclic)
    parents: tuple[tuple[int, ...], ...] | None  # direct predecessors; None when cyclic
    incoming: tuple[int, ...]  # effective incoming edge count per node
    reachable: frozenset[str]  # nodes reachable from the entrypoints
    # The transitive predecessors as bitsets, folded on the first read of a farther node
    # (empty until then): a list only so that the value can fill it once.
    closure: list[tuple[int, ...]]

    def is_predecessor(self, target: str, node: str) -> bool:
        """Whether ``target`` runs before ``node`` on every path (transitively)."""
        if self.parents is None:
            return True  # a cyclic scope already has AG111; no dataflow verdict on top
        mine, theirs = self.index[node], self.index[target]
        if theirs in self.parents[mine]:
            return True
        if not self.closure:
            self.closure.append(_closure(self.parents, [self.index[n] for n in self.order]))
        return bool(self.closure[0][mine] >> theirs & 1)


def _closure(parents: tuple[tuple[int, ...], ...], order: list[int]) -> tuple[int, ...]:
    """Each node's transitive predecessors as a bitset, folded along a topological order."""
    bits = [0] * len(parents)
    for i in order:  # the predecessors of i are final when i is reached
        mine = 0
        for j in parents[i]:
            mine |= bits[j] | (1 << j)
        bits[i] = mine
    return tuple(bits)


def analyse(scope: Scope, out: Collector) -> Topology:
    """Compute the effective edge set of ``scope`` and report its AG1xx/AG9xx findings."""
    ids = scope.nodes
    index = {node_id: i for i, node_id in enumerate(ids)}
    n = len(index)
    edges: list[Edge] = []
    explicit_pairs: set[tuple[str, str]] = set()
    for i, edge in scope.edges():
        src, dst = edge.get("from"), edge.get("to")
        if not isinstance(src, str) or not isinstance(dst, str):
            continue  # schema error already reported
        explicit_pairs.add((src, dst))
        unknown = [name for name in (src, dst) if name not in index]
        if unknown:
            field_name = "from" if src in unknown else "to"
            named = " and ".join(repr(u) for u in dict.fromkeys(unknown))
            out.add("AG113", f"{scope.pointer}/edges/{i}/{field_name}",
                    f"edge {src} -> {dst} names {named}, which is not a node of this scope",
                    hint=near("AG113", unknown[0], index))
            continue
        kind = edge.get("kind", "sequence")
        when = edge.get("when")
        edges.append((src, dst, kind if isinstance(kind, str) else "sequence",
                      when if isinstance(when, str) else None))
    for node_id, node in ids.items():
        for i, dep in enumerate(list_of(node.get("depends_on"))):
            if not isinstance(dep, str):
                continue
            if dep not in index:
                out.add("AG114", scope.node_pointer(node_id, "depends_on", i),
                        f"node {node_id!r} depends on {dep!r}, which is not a node of this scope",
                        hint=near("AG114", dep, index))
                continue
            if (dep, node_id) in explicit_pairs:
                out.add("AG901", scope.node_pointer(node_id, "depends_on", i),
                        f"{dep} -> {node_id} is declared both by depends_on and by an explicit "
                        "edge")
            edges.append((dep, node_id, "sequence", None))
    effective = tuple(dict.fromkeys(edges))

    outgoing: list[list[int]] = [[] for _ in range(n)]
    incoming = [0] * n
    for src, dst, _kind, _when in effective:
        outgoing[index[src]].append(index[dst])
        incoming[index[dst]] += 1

    entries = _check_entrypoints(scope, index, incoming, out)
    order = _topological_order(n, outgoing, incoming)
    names = list(ids)
    parents: tuple[tuple[int, ...], ...] | None = None
    if len(order) < n:
        cycle = _find_cycle(n, outgoing, set(range(n)) - set(order))
        path = " -> ".join(names[i] for i in cycle)
        out.add("AG111", scope.node_pointer(names[cycle[0]]),
                f"the effective edges of this scope form a cycle: {path}")
        order = []
    else:
        direct: list[list[int]] = [[] for _ in range(n)]
        for i, targets in enumerate(outgoing):
            for j in targets:
                direct[j].append(i)
        parents = tuple(map(tuple, direct))

    reachable = _reachable(n, entries, outgoing)
    for i, node_id in enumerate(names):
        if not reachable[i]:
            out.add("AG903", scope.node_pointer(node_id),
                    f"node {node_id!r} is unreachable: no entrypoint leads to it, so it never "
                    "runs")
    _check_joins(scope, index, incoming, out)
    return Topology(edges=effective, index=index, order=tuple(names[i] for i in order),
                    parents=parents, incoming=tuple(incoming),
                    reachable=frozenset(names[i] for i in range(n) if reachable[i]), closure=[])


def _check_entrypoints(scope: Scope, index: dict[str, int], incoming: list[int],
                       out: Collector) -> list[int]:
    entries: list[int] = []
    for i, entry in enumerate(list_of(scope.data.get("entrypoints"))):
        if not isinstance(entry, str):
            continue
        where = f"{scope.pointer}/entrypoints/{i}"
        if entry not in index:
            code = "AG115" if scope.is_root else "AG133"
            out.add(code, where, f"entrypoint {entry!r} is not a node of this "
                    f"{'graph' if scope.is_root else 'fragment'}", hint=near(code, entry, index))
            continue
        entries.append(index[entry])
        if incoming[index[entry]]:
            out.add("AG112", where,
                    f"entrypoint {entry!r} has {incoming[index[entry]]} incoming edge(s); an "
                    "entrypoint starts the run and cannot wait for another node")
    return entries


def _topological_order(n: int, outgoing: list[list[int]], incoming: list[int]) -> list[int]:
    """Kahn's algorithm; among ready nodes the first declared goes first (§17.4)."""
    remaining = list(incoming)
    ready = [i for i in range(n) if remaining[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in outgoing[i]:
            remaining[j] -= 1
            if remaining[j] == 0:
                heapq.heappush(ready, j)
    return order


def _find_cycle(n: int, outgoing: list[list[int]], candidates: set[int]) -> list[int]:
    """One cycle among ``candidates`` (nodes Kahn could not order), as a closed path."""
    state = [0] * n  # 0 new, 1 on the DFS stack, 2 done
    for start in sorted(candidates):
        if state[start]:
            continue
        stack: list[tuple[int, int]] = [(start, 0)]
        path: list[int] = [start]
        state[start] = 1
        while stack:
            node, k = stack[-1]
            if k < len(outgoing[node]):
                stack[-1] = (node, k + 1)
                nxt = outgoing[node][k]
                if state[nxt] == 1:
                    return path[path.index(nxt):] + [nxt]
                if state[nxt] == 0 and nxt in candidates:
                    state[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                state[node] = 2
                stack.pop()
                path.pop()
    return [min(candidates), min(candidates)]  # unreachable: Kahn left a cycle behind


def _reachable(n: int, entries: list[int], outgoing: list[list[int]]) -> bytearray:
    seen = bytearray(n)
    stack = list(entries)
    while stack:
        i = stack.pop()
        if seen[i]:
            continue
        seen[i] = 1
        stack.extend(j for j in outgoing[i] if not seen[j])
    return seen


def _check_joins(scope: Scope, index: dict[str, int], incoming: list[int],
                 out: Collector) -> None:
    for node_id, node in scope.nodes.items():
        count = node.get("join_count")
        if node.get("join") != "n_of" or type(count) is not int:
            continue
        have = incoming[index[node_id]]
        if count > have:
            out.add("AG116", scope.node_pointer(node_id, "join_count"),
                    f"node {node_id!r} waits for {count} active incoming edges but has only "
                    f"{have}; the join can never be met")
