"""A layered (Sugiyama-style) drawing of one graph scope, computed, never hand-placed.

The steps, each a small function: longest-path layering (a node sits one column right of its
furthest predecessor), dummy points on edges that span more than one column (so long edges
are routed between nodes instead of through them), barycentre ordering swept left to right
and back a few times (fewer crossings), then coordinates. Pure: ids and edges in, a frozen
:class:`Layout` out, so the same scope is always drawn the same way.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from rein.core.frozen import Frozen

NODE_W = 168
NODE_H = 44
GAP_X = 56  # between columns: room for the edges' curves
GAP_Y = 18
MARGIN = 16
SWEEPS = 4  # barycentre passes each way; more rarely changes an order of this size


class Placed(Frozen):
    """A node's box: its top-left corner, and its column and row."""

    x: float
    y: float
    layer: int
    row: int


class Route(Frozen):
    """An edge as the points it passes through, source box to target box."""

    source: str
    target: str
    points: tuple[tuple[float, float], ...]


class Layout(Frozen):
    nodes: dict[str, Placed]
    routes: tuple[Route, ...]
    width: float
    height: float
    gap_x: float = GAP_X  # between columns, as drawn


def layers(ids: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layering. ``ids`` in a topological order; an edge that points back
    (which AGS forbids within a scope, but a drawing must not loop on) is ignored."""
    position = {n: i for i, n in enumerate(ids)}
    preds: dict[str, list[str]] = {n: [] for n in ids}
    for s, t in edges:
        if s in position and t in position and position[s] < position[t]:
            preds[t].append(s)
    layer: dict[str, int] = {}
    for n in ids:
        layer[n] = max((layer[p] + 1 for p in preds[n]), default=0)
    return layer


def _chains(edges: Sequence[tuple[str, str]], layer: dict[str, int]
            ) -> tuple[dict[str, int], list[list[str]]]:
    """Every forward edge as a chain of vertices, one per column it crosses: dummies named
    ``\\0source\\0target\\0k`` fill the columns between its ends."""
    full = dict(layer)
    chains: list[list[str]] = []
    for s, t in edges:
        if s not in layer or t not in layer or layer[s] >= layer[t]:
            continue
        chain = [s]
        for k in range(layer[s] + 1, layer[t]):
            dummy = f"\0{s}\0{t}\0{k}"
            full[dummy] = k
            chain.append(dummy)
        chain.append(t)
        chains.append(chain)
    return full, chains


def _order(full: dict[str, int], chains: list[list[str]], ids: Sequence[str]
           ) -> list[list[str]]:
    depth = max(full.values(), default=-1) + 1
    rows: list[list[str]] = [[] for _ in range(depth)]
    seen: set[str] = set()
    for n in [*ids, *(v for c in chains for v in c)]:  # declaration order first
        if n not in seen:
            seen.add(n)
            rows[full[n]].append(n)
    left: dict[str, list[str]] = {n: [] for n in full}
    right: dict[str, list[str]] = {n: [] for n in full}
    for chain in chains:
        for a, b in itertools.pairwise(chain):
            right[a].append(b)
            left[b].append(a)
    for _ in range(SWEEPS):
        for i in range(1, depth):
            _by_barycentre(rows[i], rows[i - 1], left)
        for i in range(depth - 2, -1, -1):
            _by_barycentre(rows[i], rows[i + 1], right)
    return rows


def _by_barycentre(row: list[str], fixed: list[str], neighbours: dict[str, list[str]]) -> None:
    index = {n: i for i, n in enumerate(fixed)}
    here = {n: i for i, n in enumerate(row)}

    def key(n: str) -> tuple[float, int]:
        near = [index[m] for m in neighbours[n] if m in index]
        # A vertex with no neighbour over there keeps its place (stable sort on position).
        return (sum(near) / len(near) if near else float(here[n]), here[n])

    row.sort(key=key)


def layout(ids: Sequence[str], edges: Sequence[tuple[str, str]], *,
           gap_x: float = GAP_X) -> Layout:
    """Place ``ids`` (a topological order) left to right by layer, and route ``edges``;
    ``gap_x``: the room between columns (wider where edges carry labels)."""
    layer = layers(ids, edges)
    full, chains = _chains(edges, layer)
    rows = _order(full, chains, ids)
    tallest = max((len(r) for r in rows), default=0)
    height = 2 * MARGIN + max(tallest, 1) * (NODE_H + GAP_Y) - GAP_Y
    centre: dict[str, tuple[float, float]] = {}
    placed: dict[str, Placed] = {}
    for li, row in enumerate(rows):
        # Each column centred vertically: short columns sit in the middle, not at the top.
        top = MARGIN + (tallest - len(row)) * (NODE_H + GAP_Y) / 2
        for ri, n in enumerate(row):
            x, y = MARGIN + li * (NODE_W + gap_x), top + ri * (NODE_H + GAP_Y)
            centre[n] = (x + NODE_W / 2, y + NODE_H / 2)
            if not n.startswith("\0"):
                placed[n] = Placed(x=x, y=y, layer=li, row=ri)
    routes = []
    for chain in chains:
        s, t = chain[0], chain[-1]
        start = (centre[s][0] + NODE_W / 2, centre[s][1])
        end = (centre[t][0] - NODE_W / 2, centre[t][1])
        routes.append(Route(source=s, target=t,
                            points=(start, *(centre[d] for d in chain[1:-1]), end)))
    width = 2 * MARGIN + max(len(rows), 1) * (NODE_W + gap_x) - gap_x
    return Layout(nodes=placed, routes=tuple(routes), width=width, height=height,
                  gap_x=gap_x)


def crossings(lay: Layout) -> int:
    """How many pairs of edge segments between adjacent columns cross (for tests and for
    judging the ordering)."""
    segments: dict[int, list[tuple[float, float]]] = {}
    for r in lay.routes:
        for (x1, y1), (_x2, y2) in zip(r.points, r.points[1:], strict=False):
            column = int((x1 - MARGIN) // (NODE_W + lay.gap_x))
            segments.setdefault(column, []).append((y1, y2))
    count = 0
    for segs in segments.values():
        for i, (a1, a2) in enumerate(segs):
            for b1, b2 in segs[i + 1:]:
                if (a1 - b1) * (a2 - b2) < 0:
                    count += 1
    return count


__all__ = ["NODE_H", "NODE_W", "Layout", "Placed", "Route", "crossings", "layers", "layout"]
