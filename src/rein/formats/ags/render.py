"""The plan as text: what a reviewer reads before approving (the pictures, Mermaid and DOT,
are in :mod:`rein.formats.ags.pictures`).

A pure function of a :class:`~rein.formats.ags.plan_model.Plan` and deterministic: the same
plan always renders to the same bytes, so a rendering can be diffed and reviewed like the
graph itself.
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
    facts = [n.type + container_facts(n)]
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


def container_facts(n: NodePlan) -> str:
    """The kind's own facts after its type (``loop until ≤3``, ``map ≤20 items, …``)."""
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
    if plan.cost_estimated:
        out.append(f"  projected ${plan.projected_cost_usd:.2f}{tokens} from node estimates")
    else:
        out.append("  projected cost unknown: no node estimates its cost" + (
            f"; {plan.projected_tokens:,} tokens from node estimates"
            if plan.projected_tokens else ""))
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
