"""Pictures of a plan that read at a glance: Mermaid and Graphviz DOT.

Nodes are shaped and coloured by kind (task, decision, gate, loop, map, subgraph), or, for
a run, coloured by the state each node reached. Arrows carry the branch they stand for (the
edge's ``label``, or the decision branch its condition tests) rather than the whole
condition, and a legend says what the colours and arrows mean. The review text
(:mod:`rein.formats.ags.render`) keeps the full expressions.

Both renderers are pure and deterministic: the same plan (and states) always draws the
same bytes, so a picture can be diffed like the graph itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rein.formats.ags.plan_model import EdgePlan, NodePlan, Plan, ScopePlan
from rein.formats.ags.render import container_facts

#: Which statuses each node of a run reached, by qualified node id ("loop.step"); a node
#: that ran more than once (loop iterations, map items) has one status per instance.
States = Mapping[str, Sequence[str]]

# kind → (fill, stroke): light fills so the text stays readable in print and dark mode.
KIND_COLOURS: Mapping[str, tuple[str, str]] = {
    "task": ("#dbeafe", "#1d4ed8"),
    "decision": ("#fef3c7", "#b45309"),
    "gate": ("#fce7f3", "#be185d"),
    "loop": ("#dcfce7", "#15803d"),
    "map": ("#ccfbf1", "#0f766e"),
    "subgraph": ("#ede9fe", "#6d28d9"),
}
# state → (fill, stroke), in the order a person looks for them: what went wrong first.
STATE_COLOURS: Mapping[str, tuple[str, str]] = {
    "failed": ("#fecaca", "#b91c1c"),
    "blocked": ("#fed7aa", "#c2410c"),
    "awaiting_human": ("#fef08a", "#a16207"),
    "running": ("#bfdbfe", "#1d4ed8"),
    "cancelled": ("#e5e7eb", "#374151"),
    "ready": ("#e0e7ff", "#4338ca"),
    "pending": ("#f3f4f6", "#6b7280"),
    "succeeded": ("#bbf7d0", "#15803d"),
    "skipped": ("#f9fafb", "#9ca3af"),
    "not_reached": ("#ffffff", "#9ca3af"),
}
_FAILURE_RED = "#b91c1c"
_SHORT = 28  # a condition longer than this is cut on the arrow (the text plan has it whole)
_DECISION_TEST = re.compile(r"""^\s*nodes\.(\w+)\.outputs\.decision\s*==\s*["']([^"']+)["']\s*$"""
                            r"""|^\s*["']([^"']+)["']\s*==\s*nodes\.(\w+)\.outputs\.decision\s*$""")


def node_state(statuses: Sequence[str] | None) -> str:
    """The one state a node is coloured by: the first of :data:`STATE_COLOURS` it reached."""
    return next((s for s in STATE_COLOURS if s in (statuses or ())), "not_reached")


def state_caption(statuses: Sequence[str] | None) -> str:
    """``succeeded``, ``succeeded ×3``, or ``failed 1 · succeeded 2`` for many instances."""
    if not statuses:
        return "not reached"
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s] = counts.get(s, 0) + 1
    if len(counts) == 1:
        (only, n), = counts.items()
        return only if n == 1 else f"{only} ×{n}"
    ranked = sorted(counts, key=lambda s: list(STATE_COLOURS).index(s)
                    if s in STATE_COLOURS else len(STATE_COLOURS))
    return " · ".join(f"{s} {counts[s]}" for s in ranked)


def edge_label(edge: EdgePlan, scope: ScopePlan) -> str | None:
    """What an arrow says: its label, else the decision branch its condition tests, else a
    shortened condition; ``on failure`` arrows say so first."""
    words = edge.label or (_branch(edge, scope) if edge.kind == "conditional" else None)
    if words is None and edge.when:
        words = "if " + _short(edge.when)
    if edge.kind == "on_failure":
        return "on failure" + (f": {words}" if words else "")
    return words


def _branch(edge: EdgePlan, scope: ScopePlan) -> str | None:
    match = _DECISION_TEST.match(edge.when or "")
    if match is None:
        return None
    node, branch = (match.group(1), match.group(2)) if match.group(1) else (
        match.group(4), match.group(3))
    source = next((n for n in scope.nodes if n.id == node), None)
    return branch if source is not None and source.type == "decision" else None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHORT else text[:_SHORT - 1].rstrip() + "…"


# ---------------------------------------------------------------------------- mermaid


def render_mermaid(plan: Plan, states: States | None = None) -> str:
    """A Mermaid flowchart: shapes and colours by kind (by state when ``states`` is given),
    branch labels on the arrows, nested bodies as subgraphs, and a legend."""
    ids = _Ids()
    lines = ["flowchart TD"]
    lines += _mermaid_scope(plan.root, ids, "  ", states)
    used = _used(plan, states)
    lines += _mermaid_legend(used, states is not None, _edge_kinds(plan))
    palette = STATE_COLOURS if states is not None else KIND_COLOURS
    for name in used:
        fill, stroke = palette[name]
        dashed = ",stroke-dasharray:4 3" if name in ("not_reached", "skipped") else ""
        lines.append(f"  classDef {name} fill:{fill},stroke:{stroke},color:#111827{dashed}")
    return "\n".join(lines) + "\n"


def _mermaid_scope(scope: ScopePlan, ids: _Ids, pad: str, states: States | None) -> list[str]:
    out: list[str] = []
    for n in scope.in_order():
        nid = ids.node(n.qualified)
        out.append(f"{pad}{nid}{_mermaid_shape(n, states)}:::{_class(n, states)}")
        if n.child is not None:
            sid = ids.scope(n.child.path)
            caption = _mm(f"{n.id}: {n.child_label}" + _times(n))
            out.append(f"{pad}subgraph {sid} [\"{caption}\"]")
            out.append(f"{pad}  direction TB")
            out += _mermaid_scope(n.child, ids, pad + "  ", states)
            out.append(f"{pad}end")
            for entry in n.child.entrypoints:
                child_id = ids.node(f"{n.child.path}.{entry}")
                out.append(f"{pad}{nid} -.->|\"{_mm(_times(n).strip() or 'runs')}\"| {child_id}")
    for e in scope.edges:
        src = ids.node(_qualify(scope, e.source))
        dst = ids.node(_qualify(scope, e.target))
        arrow = "-.->" if e.kind == "on_failure" else "-->"
        label = edge_label(e, scope)
        out.append(f"{pad}{src} {arrow}|\"{_mm(label)}\"| {dst}" if label
                   else f"{pad}{src} {arrow} {dst}")
    return out


def _mermaid_shape(n: NodePlan, states: States | None) -> str:
    return _shaped(n.type, "<br/>".join(_mm(part) for part in _lines(n, states) if part))


def _shaped(kind: str, text: str) -> str:
    """``text`` in the Mermaid shape of ``kind``: diamond, hexagon, double box or box."""
    if kind == "decision":
        return "{\"" + text + "\"}"
    if kind == "gate":
        return "{{\"" + text + "\"}}"
    if kind in ("loop", "map", "subgraph"):
        return "[[\"" + text + "\"]]"
    return "[\"" + text + "\"]"


def _mermaid_legend(used: Sequence[str], by_state: bool, edge_kinds: set[str]) -> list[str]:
    out = ["  subgraph legend [\"Legend\"]", "    direction LR"]
    for i, name in enumerate(used):
        text = _mm(name.replace("_", " "))
        shape = f"[\"{text}\"]" if by_state else _shaped(name, text)
        out.append(f"    legend{i}{shape}:::{name}")
    arrows = ["solid arrow: runs after"]
    if "conditional" in edge_kinds:
        arrows.append("label: the branch taken")
    if "on_failure" in edge_kinds:
        arrows.append("dashed arrow: on failure")
    if "body" in edge_kinds:
        arrows.append("dotted arrow: runs the body in the box")
    out.append(f"    legend_arrows[\"{_mm(' · '.join(arrows))}\"]")
    out.append("  end")
    return out


def _mm(text: str | None) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for the characters it parses)."""
    text = " ".join(str(text or "").split())
    for raw, entity in (("#", "#35;"), ("\"", "#quot;"), ("<", "#lt;"), (">", "#gt;"),
                        ("|", "#124;")):
        text = text.replace(raw, entity)
    return text


# ---------------------------------------------------------------------------- dot


_DOT_SHAPES = {"decision": "diamond", "gate": "hexagon", "loop": "box3d", "map": "box3d",
               "subgraph": "component"}


def render_dot(plan: Plan, states: States | None = None) -> str:
    """Graphviz DOT: shapes and colours by kind (by state when ``states`` is given), one
    cluster per nested scope, branch labels, dashed red arrows on failure, and a legend."""
    lines = [f"digraph {_q(plan.graph_id or 'graph')} {{",
             "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11];",
             "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];",
             "  edge [fontname=\"Helvetica\", fontsize=9];"]
    lines += _dot_scope(plan.root, "  ", states)
    lines += _dot_legend(_used(plan, states), states is not None, _edge_kinds(plan))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_scope(scope: ScopePlan, pad: str, states: States | None) -> list[str]:
    out: list[str] = []
    for n in scope.in_order():
        shape = _DOT_SHAPES.get(n.type, "box")
        label = "\n".join(part for part in _lines(n, states) if part)
        out.append(f"{pad}{_q(n.qualified)} [label={_q(label)}, shape={shape}, "
                   f"{_dot_colours(_class(n, states), states is not None)}];")
        if n.child is not None:
            out.append(f"{pad}subgraph {_q('cluster_' + n.child.path)} {{")
            out.append(f"{pad}  label={_q(f'{n.id}: {n.child_label}' + _times(n))};")
            out.append(f"{pad}  style=dashed;")
            out += _dot_scope(n.child, pad + "  ", states)
            out.append(f"{pad}}}")
            for entry in n.child.entrypoints:
                out.append(f"{pad}{_q(n.qualified)} -> {_q(n.child.path + '.' + entry)} "
                           f"[style=dotted, label={_q(_times(n).strip() or 'runs')}];")
    for e in scope.edges:
        attrs = []
        if e.kind == "on_failure":
            attrs += ["style=dashed", f"color={_q(_FAILURE_RED)}",
                      f"fontcolor={_q(_FAILURE_RED)}"]
        words = edge_label(e, scope)
        if words:
            attrs.append(f"label={_q(words)}")
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        out.append(f"{pad}{_q(_qualify(scope, e.source))} -> "
                   f"{_q(_qualify(scope, e.target))}{suffix};")
    return out


def _dot_colours(name: str, by_state: bool) -> str:
    fill, stroke = (STATE_COLOURS if by_state else KIND_COLOURS)[name]
    style = "\"rounded,filled,dashed\"" if name in ("not_reached", "skipped") else \
        "\"rounded,filled\""
    return f"style={style}, fillcolor={_q(fill)}, color={_q(stroke)}"


def _dot_legend(used: Sequence[str], by_state: bool, edge_kinds: set[str]) -> list[str]:
    """One table node: a swatch per kind (or state) used, then what the arrows mean."""
    rows = ['<TR><TD COLSPAN="2"><B>Legend</B></TD></TR>']
    palette = STATE_COLOURS if by_state else KIND_COLOURS
    for name in used:
        fill, stroke = palette[name]
        shape = "" if by_state else f" ({_DOT_SHAPE_WORDS.get(name, 'box')})"
        rows.append(f'<TR><TD BGCOLOR="{fill}" COLOR="{stroke}" WIDTH="24"></TD>'
                    f'<TD ALIGN="LEFT">{_html(name.replace("_", " ") + shape)}</TD></TR>')
    arrows = [("&#8594;", "#111827", "runs after")]
    if "conditional" in edge_kinds:
        arrows.append(("label", "#111827", "the branch the arrow stands for"))
    if "on_failure" in edge_kinds:
        arrows.append(("- - &#8594;", _FAILURE_RED, "runs when the node fails"))
    if "body" in edge_kinds:
        arrows.append(("&#183; &#183; &#8594;", "#111827", "runs the body in the dashed box"))
    for mark, colour, text in arrows:
        rows.append(f'<TR><TD><FONT COLOR="{colour}">{mark}</FONT></TD>'
                    f'<TD ALIGN="LEFT">{_html(text)}</TD></TR>')
    table = ('<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2" CELLPADDING="4">'
             + "".join(rows) + "</TABLE>")
    return [f"  \"legend\" [shape=plaintext, style=\"\", label=<{table}>];"]


_DOT_SHAPE_WORDS = {"decision": "diamond", "gate": "hexagon", "loop": "3-D box",
                    "map": "3-D box", "subgraph": "component"}


def _html(text: str) -> str:
    """Text safe inside a Graphviz HTML-like label."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _q(text: str) -> str:
    """A DOT quoted string: backslashes and quotes escaped, newlines as centred breaks."""
    body = str(text).replace("\\", "\\\\").replace("\"", "\\\"")
    return "\"" + body.replace("\r", "").replace("\n", "\\n") + "\""


# ---------------------------------------------------------------------------- shared


def _lines(n: NodePlan, states: States | None) -> tuple[str, ...]:
    last = state_caption(states.get(n.qualified)) if states is not None else _subtitle(n)
    return (n.id, n.title, last)


def _class(n: NodePlan, states: States | None) -> str:
    if states is not None:
        return node_state(states.get(n.qualified))
    return n.type if n.type in KIND_COLOURS else "task"


def _used(plan: Plan, states: States | None) -> list[str]:
    """The kinds (or states) the picture uses, in legend order."""
    seen = {_class(n, states) for n in plan.nodes()}
    return [name for name in (STATE_COLOURS if states is not None else KIND_COLOURS)
            if name in seen]


def _edge_kinds(plan: Plan) -> set[str]:
    """The kinds of arrow a picture draws ("body": a container into its nested scope)."""
    kinds = {e.kind for scope in plan.scopes() for e in scope.edges}
    return kinds | ({"body"} if any(n.child is not None for n in plan.nodes()) else set())


def _subtitle(n: NodePlan) -> str:
    parts = [n.type + container_facts(n)]
    if n.tier:
        parts.append(n.tier)
    if n.attempts > 1:
        parts.append(f"×{n.attempts}")
    return " · ".join(parts)


def _times(n: NodePlan) -> str:
    if n.type == "loop":
        return f" ≤{n.multiplier} iterations"
    if n.type == "map":
        return f" ≤{n.multiplier} items"
    return ""


def _qualify(scope: ScopePlan, node_id: str) -> str:
    return f"{scope.path}.{node_id}" if scope.path else node_id


class _Ids:
    """Short, stable Mermaid ids (n0, n1, …; s0, …) in order of first use."""

    def __init__(self) -> None:
        self._nodes: dict[str, str] = {}
        self._scopes: dict[str, str] = {}

    def node(self, qualified: str) -> str:
        return self._nodes.setdefault(qualified, f"n{len(self._nodes)}")

    def scope(self, path: str) -> str:
        return self._scopes.setdefault(path, f"s{len(self._scopes)}")
