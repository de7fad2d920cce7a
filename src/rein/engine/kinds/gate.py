"""Gate nodes (AGS §7.3): approve, review, input, notify — answered through the queue.

``approve``: accepted → succeeded with ``decision = "approved"``; declined or timed out →
``on_reject``: ``fail`` (failed), ``skip_dependents`` (skipped, skips propagate) or
``route`` (succeeded with ``decision = "rejected"``). ``review``: each declared output of the
gate starts as the ``present`` entry at the same position and takes the reviewer's edit from
the answer's ``values`` (checked like outputs); no values is a plain approval. ``input``:
the answer's ``values`` must fit ``gate.collect`` and become the gate's outputs.
``notify`` succeeds at once and is recorded as a human event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus
from rein.engine import approvals
from rein.engine.evaluation import diagnostic, value
from rein.engine.expressions import render
from rein.engine.kinds import ladder
from rein.engine.node_steps import human_timeouts
from rein.engine.outputs import check_outputs
from rein.engine.params import check_value
from rein.engine.runtime import RunContext, ScopeInstance
from rein.engine.transitions import transition


async def run_gate(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any]
                   ) -> None:
    gate = node.get("gate") or {}
    state = inst.states[nid]
    mode = str(gate.get("mode", "approve"))
    key = inst.key(nid)
    ctx.root().budget.start_execution(ctx.clock.now())
    state.attempts = 1
    scope = inst.scope().with_self({"id": nid, "attempt": 1, "inputs": {}, "outputs": {}})
    prompt = render(str(gate.get("prompt") or node.get("title", "")), scope)
    events = state.record.setdefault("human_events", [])
    if mode == "notify":
        events.append({"at_stage": "gate", "mode": mode, "outcome": "notified",
                       "at": ctx.now()})
        ctx.emit("human/notified", {"node": key, "prompt": prompt})
        transition(state, NodeStatus.SUCCEEDED)
        return
    present = [value(ctx, scope, str(e), f"node {nid} gate.present") for e in
               gate.get("present") or []]
    collect = gate.get("collect") or {}
    row = await approvals.ask(
        ctx,
        key=f"gate:{key}",
        kind=ApprovalKind.GATE,
        request={"node": key, "mode": mode, "prompt": prompt, "present": present,
                 "roles": list(gate.get("roles") or []), "collect": dict(collect),
                 "outputs": sorted((node.get("outputs") or {}).keys()),
                 **human_timeouts(ctx, gate)},
        shows=present,
    )
    answer = row.answer or {}
    accepted = row.status is ApprovalStatus.ACCEPTED
    values = dict(answer.get("values") or {})
    outcome = None
    if accepted and mode == "input":
        problems = _input_problems(values, collect)
        if problems:
            diagnostic(ctx, "RT031", "error", f"gate {nid}: " + "; ".join(problems), node=key)
            accepted = False
        outcome = "provided"
    elif accepted and mode == "review":
        values, edited, problems = _reviewed(node, present, values, ctx)
        if problems:
            diagnostic(ctx, "RT031", "error", f"gate {nid}: " + "; ".join(problems), node=key)
            accepted = False
        outcome = "edited" if edited else "approved"
    events.append(approvals.human_event(row, stage="gate", mode=mode, outcome=outcome
                                        if accepted else None))
    if accepted:
        state.outputs = {**values, "decision": "approved"}
        state.decision = "approved"
        transition(state, NodeStatus.SUCCEEDED)
        return
    on_reject = gate.get("on_reject", "fail")
    if row.status is ApprovalStatus.TIMED_OUT and row.request.get("on_timeout") == "escalate":
        state.record["escalated"] = True
        if inst.model.specs[nid].failure.escalation is not None and await ladder.escalate(
                ctx, inst, nid, node, reason="gate timed out"):
            return  # the escalation handed back outputs (a person, a node)
    if on_reject == "route":
        state.outputs = {"decision": "rejected"}
        state.decision = "rejected"
        transition(state, NodeStatus.SUCCEEDED)
    elif on_reject == "skip_dependents":
        transition(state, NodeStatus.SKIPPED)
        state.record["skip_reason"] = "gate rejected (skip_dependents)"
    else:
        transition(state, NodeStatus.FAILED)
        state.unabsorbed = True


def _reviewed(node: Mapping[str, Any], present: list[Any], values: Mapping[str, Any],
              ctx: RunContext) -> tuple[dict[str, Any], bool, list[str]]:
    """A review's outputs: each declared output starts as the material shown at the same
    position in ``present`` and takes the reviewer's edit when one is given."""
    specs = node.get("outputs") or {}
    declared = list(specs)
    shown = {name: v for name, v in zip(declared, present, strict=False) if v is not None}
    edits = {k: v for k, v in values.items() if k in specs}
    result = {**shown, **edits}
    problems = [p.message for p in check_outputs(
        edits, specs, workspace=ctx.workspace, optional=frozenset(specs))]
    return result, bool(edits), problems


def _input_problems(values: Mapping[str, Any], collect: Mapping[str, Any]) -> list[str]:
    problems = []
    for name, spec in collect.items():
        if name not in values:
            if spec.get("required", True) and "default" not in spec:
                problems.append(f"{name} is required")
            continue
        problem = check_value(values[name], spec)
        if problem:
            problems.append(f"{name}: {problem}")
    return problems
