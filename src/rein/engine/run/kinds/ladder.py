"""The failure ladder after the last attempt (AGS §14): fallback → escalation → on_exhausted.

Fallback steps run in order, each gated by its ``when``: ``alternate_node`` (another node of
the scope runs in this one's place and its outputs are adopted), ``degrade_outputs`` (accept
the last attempt if the listed outputs are there), ``relax_criteria`` (re-read the last
attempt's results with the listed criteria advisory; nothing re-runs), ``human_takeover``
(a person supplies the outputs) and ``skip``. A declared ``failure.escalation`` runs next,
whatever ``on_exhausted`` says; an escalation that hands back outputs (a person, a node)
resolves the node like a takeover, otherwise ``on_exhausted`` decides (``escalate`` and
``fail`` leave it ``failed`` with ``escalated: true``). A graph that says ``escalate``
without declaring an escalation is refused before it runs (LADDER001). Readings of
the open points are in docs/ambiguities.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus
from rein.engine.events import EventType
from rein.engine.run import approvals
from rein.engine.run.evaluation import condition, diagnostic
from rein.engine.run.expressions import render
from rein.engine.run.kinds.attempt_end import AttemptOutcome
from rein.engine.run.node_steps import checkpoints
from rein.engine.run.outcome import NodeOutcome, failed, skipped, succeeded
from rein.engine.run.outputs import check_outputs
from rein.engine.run.runtime import NodeAt
from rein.engine.run.signals import CheckpointRejected
from rein.formats.ags.spec import NodeSpec, SuccessSpec


async def exhausted(here: NodeAt, spec: NodeSpec,
                    last: AttemptOutcome | None, *, failure: FailureClass | None,
                    blocked: bool = False, produced: Mapping[str, Any] | None = None
                    ) -> NodeOutcome:
    """Where the node goes from "out of attempts". ``produced`` is what a container made
    before it failed (a loop's last collect, a map's gathered items): the escalation sees
    it, and the node keeps it unless a rung hands back other outputs."""
    outcome = await _ladder(here, spec, last, failure=failure, blocked=blocked,
                            produced=produced or {})
    if outcome.outputs is None and produced is not None:
        outcome = outcome.replace(outputs=produced)
    return outcome


async def _ladder(here: NodeAt, spec: NodeSpec,
                  last: AttemptOutcome | None, *, failure: FailureClass | None,
                  blocked: bool, produced: Mapping[str, Any]) -> NodeOutcome:
    state = here.state
    block = spec.failure
    scope = here.inst.scope().with_self({"id": here.nid, "attempt": max(1, state.attempts),
                                         "inputs": state.inputs or {},
                                         "outputs": dict(last.outputs) if last else {}})
    if not blocked:
        for step in block.fallback:
            if step.get("when") and not condition(here.run, scope, str(step["when"]),
                                                  f"node {here.nid} fallback"):
                continue
            taken = await _fallback(here, spec, step, last)
            if taken is not None:
                here.run.emit(EventType.NODE_FALLBACK, {"node": here.key,
                                                        "strategy": step["strategy"]})
                return taken.noting(fallback_used=str(step["strategy"]))
    reason = failure.value if failure else "failed"
    on_exhausted = block.on_exhausted
    if block.escalation is not None:
        # The ladder's own rung (§14): a declared escalation runs once the fallbacks are
        # spent, whatever on_exhausted says; on_exhausted then decides what an escalation
        # that handed nothing back leaves the node as (``escalate`` adds nothing more).
        resolved = await escalate(here, spec, reason=reason, produced=produced)
        if resolved is not None:
            return resolved
    elif on_exhausted == "escalate":  # refused at prepare (LADDER001)
        await escalate(here, spec, reason=reason, produced=produced)
    if on_exhausted == "skip":
        return skipped("on_exhausted: skip")
    elif on_exhausted == "succeed_degraded" and not blocked:
        diagnostic(here.run, "RT042", "warning", f"node {here.nid} ended succeed_degraded",
                   node=here.key)
        return succeeded(dict(last.outputs) if last else {}).replace(degraded=True)
    try:
        # Before the terminal status: a required checkpoint pauses the node, and a node
        # waiting for a person has not ended yet.
        await checkpoints(here, spec.raw, "on_failure", max(1, state.attempts),
                          this={"id": here.nid, "attempt": max(1, state.attempts),
                                "inputs": state.inputs or {}})
    except CheckpointRejected:
        pass  # the node fails either way; the answer is recorded as a human event
    record = {"x-rein-failure-class": failure.value} if failure is not None else {}
    if blocked:
        return NodeOutcome(status=NodeStatus.BLOCKED, unabsorbed=True, record=record)
    return failed(**record)


async def _fallback(here: NodeAt, spec: NodeSpec,
                    step: Mapping[str, Any], last: AttemptOutcome | None
                    ) -> NodeOutcome | None:
    """The outcome fallback ``step`` gives the node; None when it does not apply."""
    strategy = step.get("strategy")
    specs = spec.raw.get("outputs") or {}
    match strategy:
        case "alternate_node":
            return await _stand_in(here, str(step["node"]))
        case "degrade_outputs":
            keep = [str(o) for o in step.get("outputs") or []]
            if last is None or any(last.outputs.get(o) is None for o in keep):
                return None
            optional = frozenset(n for n in specs if n not in keep)
            if check_outputs({k: last.outputs[k] for k in keep}, specs,
                             workspace=here.env.workspace, optional=optional):
                return None
            return succeeded({k: last.outputs[k] for k in keep})
        case "relax_criteria":
            if last is None or last.success is None or last.failure is not FailureClass.CRITERIA_FAILED:
                return None
            relaxed = {str(c) for c in step.get("criteria") or []}
            if not _passes_relaxed(spec.success, last.success.results,
                                   relaxed):
                return None
            return succeeded(last.outputs, record={"x-rein-relaxed": sorted(relaxed)})
        case "human_takeover":
            return await _human_outputs(here, spec, "takeover",
                                        str(step.get("description") or spec.title or here.nid))
        case "skip":
            return skipped("fallback: skip")
    return None


def _passes_relaxed(block: SuccessSpec, results: Any, relaxed: set[str]) -> bool:
    required = [r for r in results if r.severity == "required" and r.id not in relaxed]
    passes = sum(1 for r in required if r.passed)
    if block.mode == "any":
        return passes >= 1
    if block.mode == "n_of":
        return passes >= block.count
    return passes == len(required)


async def _stand_in(here: NodeAt, other: str
                    ) -> NodeOutcome | None:
    """Run ``other`` in ``here.nid``'s place and adopt its outputs by name (§14.2)."""
    if other not in here.inst.model.nodes:
        return None
    view = here.inst.stand_in(other, here.nid)
    await here.env.execute_node(NodeAt(here.run, view, other))
    result = view.states[other]
    if result.status is not NodeStatus.SUCCEEDED:
        return None
    return succeeded(result.outputs, record={"x-rein-stand-in": view.key(other)})


async def _human_outputs(here: NodeAt,
                         spec: NodeSpec, why: str, message: str,
                         roles: list[str] | None = None) -> NodeOutcome | None:
    """A person supplies the node's outputs (takeover, or an escalation to a human)."""
    state = here.state
    specs = spec.raw.get("outputs") or {}
    row = await approvals.ask(
        here.run, key=f"{why}:{here.key}", kind=ApprovalKind.ESCALATION,
        request={"node": here.key, "mode": "input", "prompt": message,
                 "outputs": {k: {"type": v.get("type"), "description": v.get("description"),
                                 "required": v.get("required", True)}
                             for k, v in specs.items()},
                 "reason": why, **({"roles": roles} if roles else {})})
    values = dict((row.answer or {}).get("values") or {})
    accepted = row.status is ApprovalStatus.ACCEPTED
    state.record = state.record.with_human(approvals.human_event(
        row, stage=why, mode="input", outcome="provided" if accepted and values else None))
    if not accepted:
        return None
    if not values and (specs or why == "escalation"):
        return None  # acknowledged, but nothing handed back: the node stays failed
    problems = check_outputs(values, specs, workspace=here.env.workspace)
    if problems:
        diagnostic(here.run, problems[0].code, "error", f"node {here.nid}: supplied outputs: "
                   + "; ".join(p.message for p in problems), node=here.key)
        return None
    return succeeded(values)


async def escalate(here: NodeAt, spec: NodeSpec, *,
                   reason: str, produced: Mapping[str, Any] | None = None
                   ) -> NodeOutcome | None:
    """Run ``failure.escalation``: the outcome when it resolved the node (outputs handed
    back), else None. ``produced`` is what the node has made so far, as its escalation
    message and checkpoints see it."""
    state = here.state
    esc = spec.failure.escalation
    if esc is None:
        diagnostic(here.run, "LADDER001", "warning",
                   f"node {here.nid} asks to escalate but declares "
                   "no failure.escalation", node=here.key)
        return None
    state.record = state.record.noting({"escalated": True})
    here.run.emit(EventType.NODE_ESCALATED, {"node": here.key, "to": esc.get("to"),
                                             "reason": reason})
    try:
        await checkpoints(here, spec.raw, "on_escalation", max(1, state.attempts),
                          this={"id": here.nid, "attempt": max(1, state.attempts),
                                "inputs": state.inputs or {}, "outputs": dict(produced or {})})
    except CheckpointRejected:
        return None
    scope = here.inst.scope().with_self({"id": here.nid, "attempt": max(1, state.attempts),
                                         "inputs": state.inputs or {},
                                         "outputs": dict(produced or {})})
    match esc.get("to"):
        case "human":
            message = render(str(esc.get("message") or f"{spec.title or here.nid}: {reason}"),
                             scope)
            return await _human_outputs(here, spec, "escalation", message,
                                        [str(r) for r in esc.get("roles") or []])
        case "node":
            return await _stand_in(here, str(esc.get("node")))
        case other:
            # AGS §18.2: a human interaction that cannot be presented is RT015; the spec
            # asks for a warning and the ladder going on (§11: unknown channel).
            diagnostic(here.run, "RT015", "warning",
                       f"node {here.nid}: escalation to {other!r} cannot "
                       "be presented: rein has no such channel; the node goes on down its "
                       "failure ladder", node=here.key)
            return None
