"""Pictures of a plan: the text a reviewer reads before approving, Mermaid, and Graphviz DOT.

All three are pure functions of a :class:`~rein.formats.ags.plan_model.Plan` and are
deterministic: the same plan always renders to the same bytes, so a rendering can be
diffed and reviewed like the graph itself.
"""

from __future__ import annotations

import textwrap

from rein.formats.ags.plan_model import EdgePlan, NodePlan, Plan, ScopePlan

_WIDTH = 96


# ---------------------------------------------------------------------------- text


def render_text(plan: Plan) -> str:
    """The plan as a reviewer reads it: objective, schedule, people, budgets, notices."""
    lines: list[str] = [f"Plan: {plan.title}"]
    head = [("graph", f"{plan.graph_id}" + (f" {plan.version}" if plan.version else "")),
            ("file", plan.source or "<input>"), ("digest", plan.digest),
            ("level", (f"requires_conformance {plan.requires_conformance}; the features used "
                      f"need level {plan.required_level}"))]
    lines += [f"  {k:<10}{v}" for k, v in head]
    lines += _wrap("objective", plan.objective, indent=2)
    ceiling = plan.constraints.get("max_node_executions")
    of = f" (ceiling {ceiling})" if ceiling is not None else ""
    lines += ["", f"Schedule: worst case {plan.worst_case_executions} node executions{of}"]
    lines += _scope_text(plan.root, indent=2)
    lines += ["", "Tiers (nodes that call a model): "
              + ", ".join(f"{t} {n}" for t, n in plan.tiers.items())]
    lines += _people_text(plan)
    lines += _budget_text(plan)
    lines += ["", f"Notices ({len(plan.notices)})" if plan.notices else "Notices: none"]
    for n in plan.notices:
        where = f"{n.file} " if n.file else ""
        lines += _wrap(n.code, f"{n.message} [{where}{n.pointer or '/'}]", indent=2, key=8)
    return "\n".join(lines) + "\n"


def _scope_text(scope: ScopePlan, indent: int) -> list[str]:
    pad = " " * indent
    incoming: dict[str, list[EdgePlan]] = {}
    for e in scope.edges:
        incoming.setdefault(e.target, []).append(e)
    by_id = {n.id: n for n in scope.nodes}
    out: list[str] = []
    for step, group in enumerate(scope.groups, start=1):
        parallel = " (may run in parallel)" if len(group) > 1 else ""
        out.append(f"{pad}step {step}{parallel}")
        for node_id in group:
            out += _node_text(by_id[node_id], incoming.get(node_id, []), scope, indent + 2)
    if scope.unreachable:
        out.append(f"{pad}unreachable (never scheduled): {', '.join(scope.unreachable)}")
    return out


def _node_text(n: NodePlan, incoming: list[EdgePlan], scope: ScopePlan,
               indent: int) -> list[str]:
    pad = " " * indent
    facts = [n.type + _container_facts(n)]
    if n.tier:
        facts.append(n.tier)
    if n.attempts > 1:
        facts.append(f"{n.attempts} attempts")
    facts.append(f"worst {n.worst_case}")
    if n.id in scope.entrypoints:
        facts.append("entrypoint")
    out = [f"{pad}{n.id}  " + " · ".join(facts)]
    inner = indent + 4
    out += _wrap("", n.title, indent=inner, key=0)
    if incoming:
        after = ", ".join(_edge_text(e) for e in incoming)
        join = f" (join {n.join}{_join_count(n)})" if n.join != "all" else ""
        out += _wrap("after", after + join, indent=inner)
    if n.when:
        out += _wrap("when", n.when, indent=inner)
    if n.criteria:
        crit = ", ".join(f"{c.id} {c.kind}" + (" (advisory)" if c.severity != "required"
                                                 else "") for c in n.criteria)
        mode = "" if n.success_mode == "all" else f" ({n.success_mode})"
        out += _wrap(f"success{mode}", crit, indent=inner)
    for h in n.effective.get("human") or []:
        if isinstance(h, dict):
            optional = "" if h.get("required", True) else ", optional"
            out += _wrap("human", f"{h.get('mode')} at {h.get('at')}{optional}", indent=inner)
    if n.type == "gate":
        gate = n.effective.get("gate") or {}
        roles = ", ".join(gate.get("roles") or []) or "anyone"
        text = f"{gate.get('mode')} by {roles}"
        if gate.get("mode") in ("approve", "review"):
            text += f"; on reject {gate.get('on_reject', 'fail')}"
        out += _wrap("gate", text, indent=inner)
    ladder = _ladder(n)
    if ladder:
        out += _wrap("failure", ladder, indent=inner)
    constraints = n.effective.get("constraints") or {}
    limits = [f"{k} {v}" for k, v in constraints.items() if k.startswith("max_")]
    if limits:
        out += _wrap("limits", ", ".join(limits), indent=inner)
    if n.child is not None:
        per = f"{n.child.worst_case} per " + ("iteration" if n.type == "loop" else
                                               "item" if n.type == "map" else "run")
        title = f" \"{n.child.title}\"" if n.child.title else ""
        out.append(f"{' ' * inner}{n.child_label}{title} (worst {per})")
        out += _scope_text(n.child, inner + 2)
    elif n.child_label:
        out.append(f"{' ' * inner}{n.child_label} (not planned: see notices)")
    return out


def _container_facts(n: NodePlan) -> str:
    block = n.effective.get(n.type) or {}
    if n.type == "loop":
        bound = "×" if block.get("mode") == "repeat" else "≤"
        return f" {block.get('mode')} {bound}{n.multiplier}"
    if n.type == "map":
        return f" ≤{n.multiplier} items, {block.get('max_parallel', 1)} at once"
    if n.type == "decision":
        return f" ({block.get('evaluator', 'agent')})"
    if n.type == "gate":
        return f" {block.get('mode')}"
    return ""


def _join_count(n: NodePlan) -> str:
    count = n.effective.get("join_count")
    return f" {count}" if n.join == "n_of" and count is not None else ""


def _edge_text(e: EdgePlan) -> str:
    if e.kind == "sequence":
        return e.source
    if e.kind == "on_failure":
        return f"{e.source} fails" + (f" and {e.when}" if e.when else "")
    return f"{e.source} if {e.when}"


def _ladder(n: NodePlan) -> str:
    steps: list[str] = []
    if n.attempts > 1:
        steps.append(f"retry ×{n.attempts}")
    steps += [f"fallback {s}" for s in n.fallback]
    if n.escalation:
        steps.append(f"escalate to {n.escalation}")
    if steps or n.on_exhausted != "fail":
        steps.append(f"then {n.on_exhausted}")
    if n.compensation:
        steps.append(f"compensate with {n.compensation}")
    return " → ".join(steps)


def _people_text(plan: Plan) -> list[str]:
    if not plan.gates:
        return ["", "People: none asked"]
    out = ["", f"People ({len(plan.gates)})"]
    for g in plan.gates:
        who = ", ".join(g.roles) or "anyone"
        where = g.node or "graph"
        what = {"gate": f"gate {g.mode}",
                "checkpoint": f"checkpoint {g.mode} at {g.at}",
                "criterion": f"human criterion {g.id}"}[g.kind]
        optional = "" if g.required else " (optional)"
        out.append(f"  {where}: {what} by {who}{optional}")
    return out


def _budget_text(plan: Plan) -> list[str]:
    out = ["", "Budgets"]
    if plan.constraints:
        out += _wrap("graph", ", ".join(f"{k} {v}" for k, v in plan.constraints.items()),
                     indent=2)
    else:
        out.append("  graph     no global constraints")
    tokens = f", {plan.projected_tokens:,} tokens" if plan.projected_tokens else ""
    out.append(f"  projected ${plan.projected_cost_usd:.2f}{tokens} from node estimates")
    return out


def _wrap(label: str, text: str, *, indent: int, key: int = 10) -> list[str]:
    """``label`` in a column ``key`` wide, then ``text`` wrapped under itself."""
    text = " ".join(str(text).split())
    prefix = " " * indent + (f"{label:<{key}}" if key else "")
    if label and len(label) >= key:
        prefix = " " * indent + label + " "
    return textwrap.wrap(text, width=max(_WIDTH, len(prefix) + 20), initial_indent=prefix,
                         subsequent_indent=" " * len(prefix),
                         break_on_hyphens=False) or [prefix.rstrip()]


# ---------------------------------------------------------------------------- mermaid


def render_mermaid(plan: Plan) -> str:
    """A Mermaid flowchart: node kinds as shapes, edge kinds and conditions on the arrows,
    loop, map and subgraph bodies as Mermaid subgraphs."""
    ids = _Ids()
    lines = ["flowchart TD"]
    lines += _mermaid_scope(plan.root, ids, "  ")
    return "\n".join(lines) + "\n"


def _mermaid_scope(scope: ScopePlan, ids: _Ids, pad: str) -> list[str]:
    out: list[str] = []
    for n in scope.in_order():
        nid = ids.node(n.qualified)
        out.append(f"{pad}{nid}{_mermaid_shape(n)}")
        if n.child is not None:
            sid = ids.scope(n.child.path)
            caption = _mm(f"{n.id}: {n.child_label}" + _times(n))
            out.append(f"{pad}subgraph {sid} [\"{caption}\"]")
            out.append(f"{pad}  direction TB")
            out += _mermaid_scope(n.child, ids, pad + "  ")
            out.append(f"{pad}end")
            for entry in n.child.entrypoints:
                child_id = ids.node(f"{n.child.path}.{entry}")
                out.append(f"{pad}{nid} -.->|\"{_mm(_times(n).strip() or 'runs')}\"| {child_id}")
    for e in scope.edges:
        src = ids.node(_qualify(scope, e.source))
        dst = ids.node(_qualify(scope, e.target))
        if e.kind == "sequence":
            label = e.label
            arrow = "-->"
        elif e.kind == "conditional":
            label, arrow = f"if {e.when}", "-->"
        else:
            label = "on failure" + (f" if {e.when}" if e.when else "")
            arrow = "-.->"
        out.append(f"{pad}{src} {arrow}|\"{_mm(label)}\"| {dst}" if label
                   else f"{pad}{src} {arrow} {dst}")
    return out


def _mermaid_shape(n: NodePlan) -> str:
    text = "<br/>".join(_mm(part) for part in (n.id, n.title, _subtitle(n)) if part)
    if n.type == "decision":
        return "{\"" + text + "\"}"
    if n.type == "gate":
        return "{{\"" + text + "\"}}"
    if n.type in ("loop", "map", "subgraph"):
        return "[[\"" + text + "\"]]"
    return "[\"" + text + "\"]"


def _mm(text: str | None) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for the characters it parses)."""
    text = " ".join(str(text or "").split())
    for raw, entity in (("#", "#35;"), ("\"", "#quot;"), ("<", "#lt;"), (">", "#gt;"),
                        ("|", "#124;")):
        text = text.replace(raw, entity)
    return text


# ---------------------------------------------------------------------------- dot


def render_dot(plan: Plan) -> str:
    """Graphviz DOT: one cluster per nested scope; dashed arrows for on_failure edges."""
    lines = [f"digraph {_q(plan.graph_id or 'graph')} {{",
             "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11];",
             "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];",
             "  edge [fontname=\"Helvetica\", fontsize=9];"]
    lines += _dot_scope(plan.root, "  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


_DOT_SHAPES = {"decision": "diamond", "gate": "hexagon", "loop": "box3d", "map": "box3d",
               "subgraph": "component"}


def _dot_scope(scope: ScopePlan, pad: str) -> list[str]:
    out: list[str] = []
    for n in scope.in_order():
        shape = _DOT_SHAPES.get(n.type, "box")
        label = "\n".join(part for part in (n.id, n.title, _subtitle(n)) if part)
        out.append(f"{pad}{_q(n.qualified)} [label={_q(label)}, shape={shape}];")
        if n.child is not None:
            out.append(f"{pad}subgraph {_q('cluster_' + n.child.path)} {{")
            out.append(f"{pad}  label={_q(f'{n.id}: {n.child_label}' + _times(n))};")
            out.append(f"{pad}  style=dashed;")
            out += _dot_scope(n.child, pad + "  ")
            out.append(f"{pad}}}")
            for entry in n.child.entrypoints:
                out.append(f"{pad}{_q(n.qualified)} -> {_q(n.child.path + '.' + entry)} "
                           f"[style=dotted, label={_q(_times(n).strip() or 'runs')}];")
    for e in scope.edges:
        attrs = []
        if e.kind == "conditional":
            attrs.append(f"label={_q('if ' + (e.when or ''))}")
        elif e.kind == "on_failure":
            attrs += ["style=dashed", "color=firebrick",
                      f"label={_q('on failure' + (' if ' + e.when if e.when else ''))}"]
        elif e.label:
            attrs.append(f"label={_q(e.label)}")
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        out.append(f"{pad}{_q(_qualify(scope, e.source))} -> "
                   f"{_q(_qualify(scope, e.target))}{suffix};")
    return out


def _q(text: str) -> str:
    """A DOT quoted string: backslashes and quotes escaped, newlines as centred breaks."""
    body = str(text).replace("\\", "\\\\").replace("\"", "\\\"")
    return "\"" + body.replace("\r", "").replace("\n", "\\n") + "\""


# ---------------------------------------------------------------------------- shared


def _subtitle(n: NodePlan) -> str:
    parts = [n.type + _container_facts(n)]
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
