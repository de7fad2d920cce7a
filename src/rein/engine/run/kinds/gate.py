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
from rein.engine.events import EventType
from rein.engine.run import approvals
from rein.engine.run.evaluation import diagnostic, value
from rein.engine.run.expressions import render
from rein.engine.run.kinds import ladder
from rein.engine.run.node_steps import human_timeouts
from rein.engine.run.outcome import NodeOutcome, failed, skipped, succeeded
from rein.engine.run.outputs import check_outputs
from rein.engine.run.runtime import NodeAt, RunContext
from rein.formats.ags.spec import NodeSpec


async def run_gate(here: NodeAt, spec: NodeSpec
                   ) -> NodeOutcome:
    node = spec.raw
    gate = node.get("gate") or {}
    state = here.state
    mode = str(gate.get("mode", "approve"))
    key = here.key
    here.run.root().env.budget.start_execution(here.env.clock.now())
    state.attempts = 1
    scope = here.inst.scope().with_self({"id": here.nid, "attempt": 1, "inputs": {}, "outputs": {}})
    prompt = render(str(gate.get("prompt") or node.get("title", "")), scope)
    if mode == "notify":
        state.record = state.record.with_human({"at_stage": "gate", "mode": mode,
                                                "outcome": "notified", "at": here.run.now()})
        here.run.emit(EventType.HUMAN_NOTIFIED, {"node": key, "prompt": prompt})
        return NodeOutcome(status=NodeStatus.SUCCEEDED)
    present = [value(here.run, scope, str(e), f"node {here.nid} gate.present") for e in
               gate.get("present") or []]
    collect = gate.get("collect") or {}
    request = {"node": key, "mode": mode, "prompt": prompt, "present": present,
               "roles": list(gate.get("roles") or []), "collect": dict(collect),
               "outputs": sorted((node.get("outputs") or {}).keys()),
               **human_timeouts(here.run, gate)}
    if node.get(RECHECK) and not approvals.asked_before(
            here.run, key=f"gate:{key}", request=request, shows=present):
        refused = await _rechecked(here, node[RECHECK])
        if refused is not None:
            return refused
    row = await approvals.ask(here.run, key=f"gate:{key}", kind=ApprovalKind.GATE,
                              request=request, shows=present)
    answer = row.answer or {}
    accepted = row.status is ApprovalStatus.ACCEPTED
    values = dict(answer.get("values") or {})
    outcome = None
    if accepted and mode == "input":
        problems = approvals.input_problems(values, collect)
        if problems:
            diagnostic(here.run, "RT031", "error", f"gate {here.nid}: " + "; ".join(problems),
                       node=key)
            accepted = False
        outcome = "provided"
    elif accepted and mode == "review":
        values, edited, problems = _reviewed(node, present, values, here.run)
        if problems:
            diagnostic(here.run, "RT031", "error", f"gate {here.nid}: " + "; ".join(problems),
                       node=key)
            accepted = False
        outcome = "edited" if edited else "approved"
    state.record = state.record.with_human(approvals.human_event(
        row, stage="gate", mode=mode, outcome=outcome if accepted else None))
    if accepted:
        return succeeded({**values, "decision": "approved"}, decision="approved")
    on_reject = gate.get("on_reject", "fail")
    if row.status is ApprovalStatus.TIMED_OUT and row.request.get("on_timeout") == "escalate":
        state.record = state.record.noting({"escalated": True})
        if spec.failure.escalation is not None:
            resolved = await ladder.escalate(here, spec, reason="gate timed out")
            if resolved is not None:
                return resolved  # the escalation handed back outputs (a person, a node)
    if on_reject == "route":
        return succeeded({"decision": "rejected"}, decision="rejected")
    if on_reject == "skip_dependents":
        return skipped("gate rejected (skip_dependents)")
    return failed()


# On a gate (a rein extension): the nodes whose work it presents. Their own checks run again
# before a person is asked about content the gate has not asked about yet (the files may
# have been edited after those nodes were checked, while the gate waited).
RECHECK = "x-rein-recheck"
# The kinds of criterion rein decides by itself; a person's or a judge's is not asked again.
_RECHECKED_KINDS = frozenset({"artifact_present", "json_schema", "regex", "command",
                              "external"})


async def _rechecked(here: NodeAt, names: Any) -> NodeOutcome | None:
    """The gate failed, without asking anyone, when the work of a node in ``names`` no
    longer passes that node's own checks; ``None`` when it does."""
    from rein.engine.run.criteria.evaluate import evaluate_success
    from rein.engine.run.kinds.criteria_context import criterion_context

    for nid in [str(n) for n in names if isinstance(n, str)]:
        writer, state = here.inst.model.nodes.get(nid), here.inst.states.get(nid)
        block = (writer or {}).get("success")
        if state is None or not isinstance(block, Mapping):
            continue
        criteria = [c for c in block.get("criteria") or []
                    if isinstance(c, Mapping) and c.get("kind") in _RECHECKED_KINDS]
        if not criteria:
            continue
        there = NodeAt(here.run, here.inst, nid)
        outputs = dict(state.outputs or {})
        success = await evaluate_success({**block, "criteria": criteria}, criterion_context(
            there, writer or {}, max(state.attempts, 1), outputs))
        if success.passed:
            continue
        said = "; ".join(str(r.evidence or r.error or "failed") for r in success.results
                         if not r.passed)
        message = (f"gate {here.nid}: the work of {nid} it presents changed since it was "
                   f"checked and no longer passes its checks: {said}")
        diagnostic(here.run, "APPROVAL007", "error", message, node=here.key)
        return failed(**{RECHECK: {"node": nid, "success": success.to_record()}})
    return None


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
        edits, specs, workspace=ctx.env.workspace, optional=frozenset(specs))]
    return result, bool(edits), problems
