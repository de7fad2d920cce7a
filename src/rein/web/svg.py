"""The DAG of one scope as inline SVG: boxes coloured by state, edges routed by the layout.

Every box carries ``data-node`` (its id in the scope) and ``data-status``; the stylesheet
colours by status and the page's script changes only those attributes as events arrive, so
the picture a reloaded page draws and the one a live page has patched are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from rein.core.frozen import Frozen
from rein.web.layout import NODE_H, NODE_W, layout
from rein.web.states import look

TITLE_CHARS = 22  # what fits in a box at the default font size


class Box(Frozen):
    id: str
    title: str
    type: str
    status: str = "pending"  # a NodeStatus value, or "pending" before the node has a row
    count: str = ""  # "3 iterations", "5 items": what ran inside a loop or map
    href: str | None = None  # a subgraph's child run, or a body's detail


class Arrow(Frozen):
    source: str
    target: str
    kind: str = "sequence"  # sequence | conditional | on_failure
    taken: bool = False  # an edge/resolved event found it active
    label: str = ""  # the branch: the edge's label, else its condition


TITLE_CHARS_EDGE = 20  # what of a branch label fits between two columns
LABELLED_GAP_X = 132  # between columns when some edge carries a label: room for it
MIN_SCALE = 0.6  # the picture shrinks to fit its box down to this, then the box scrolls


def _short(text: str) -> str:
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def _path(points: Sequence[tuple[float, float]]) -> str:
    (x0, y0), rest = points[0], points[1:]
    out = [f"M{x0:.1f},{y0:.1f}"]
    px, py = x0, y0
    for x, y in rest:
        mid = (px + x) / 2  # horizontal tangents at both ends: a smooth left-to-right flow
        out.append(f"C{mid:.1f},{py:.1f} {mid:.1f},{y:.1f} {x:.1f},{y:.1f}")
        px, py = x, y
    return " ".join(out)


def _edge_label(arrow: Arrow, points: Sequence[tuple[float, float]]) -> str:
    """The branch's name halfway along the edge's last stretch, before its target (edges
    leaving one router part there; the full text is its tooltip)."""
    (x0, y0), (x1, y1) = points[-2], points[-1]
    text = arrow.label if len(arrow.label) <= TITLE_CHARS_EDGE else \
        arrow.label[: TITLE_CHARS_EDGE - 1] + "…"
    return (f'<text class="edge-label {escape(arrow.kind)}" data-from="{escape(arrow.source)}" '
            f'data-to="{escape(arrow.target)}" x="{(x0 + x1) / 2:.1f}" '
            f'y="{(y0 + y1) / 2 - 4:.1f}" text-anchor="middle"><title>'
            f"{escape(arrow.label)}</title>{escape(text)}</text>")


def _name(ids: Sequence[str]) -> str:
    """The picture's text alternative: what it draws (each box also has its own title)."""
    shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
    return f"graph of {len(ids)} node(s): {shown}"


def render(boxes: Sequence[Box], arrows: Sequence[Arrow], *, order: Sequence[str] | None = None
           ) -> str:
    """The ``<svg>`` element. ``order``: a topological order of the ids (the plan's)."""
    ids = list(order) if order is not None else [b.id for b in boxes]
    by_id = {b.id: b for b in boxes}
    ids = [i for i in ids if i in by_id] + [b.id for b in boxes if b.id not in set(ids)]
    labelled = any(a.label for a in arrows)
    lay = layout(ids, [(a.source, a.target) for a in arrows],
                 **({"gap_x": LABELLED_GAP_X} if labelled else {}))
    kinds = {(a.source, a.target): a for a in arrows}
    labels: list[str] = []
    parts = [(f'<svg class="dag" xmlns="http://www.w3.org/2000/svg" role="img" '
             f'aria-label="{escape(_name(ids))}" viewBox="0 0 {lay.width:.0f} {lay.height:.0f}" '
             f'width="{lay.width:.0f}" height="{lay.height:.0f}" '
             # Fits its box (the stylesheet's max-width) down to MIN_SCALE; past that the
             # box scrolls rather than the text becoming unreadable.
             f'style="min-width:{min(lay.width, lay.width * MIN_SCALE):.0f}px">'),
             ('<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="5" '
             'markerHeight="5" orient="auto"><path d="M0,0 L8,4 L0,8 z"/></marker></defs>')]
    for route in lay.routes:
        arrow = kinds[(route.source, route.target)]
        taken = ' taken' if arrow.taken else ''
        parts.append(f'<path class="edge {escape(arrow.kind)}{taken}" '
                     f'data-from="{escape(route.source)}" data-to="{escape(route.target)}" '
                     f'd="{_path(route.points)}" marker-end="url(#arrow)"/>')
        if arrow.label:
            labels.append(_edge_label(arrow, route.points))
    parts.extend(labels)  # over the edges, under nothing else
    for node_id, at in lay.nodes.items():
        box = by_id[node_id]
        label = (f'<text class="title" x="{at.x + 10:.1f}" y="{at.y + 18:.1f}">'
                 f'{escape(_short(box.title or box.id))}</text>'
                 f'<text class="meta" x="{at.x + 10:.1f}" y="{at.y + 34:.1f}">'
                 f'{escape(box.type)}<tspan class="count" data-count-of="{escape(node_id)}">'
                 f'{" · " + escape(box.count) if box.count else ""}</tspan></text>')
        group = (f'<g class="node" data-node="{escape(node_id)}" '
                 f'data-status="{escape(box.status)}" data-tone="{look(box.status).tone}" '
                 f'data-type="{escape(box.type)}">'
                 f'<title>{escape(node_id)}: {escape(box.title)}</title>'
                 f'<rect x="{at.x:.1f}" y="{at.y:.1f}" width="{NODE_W}" height="{NODE_H}" '
                 f'rx="6"/>{label}</g>')
        if box.href:
            group = f'<a href="{escape(box.href)}">{group}</a>'
        parts.append(group)
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["Arrow", "Box", "render"]
