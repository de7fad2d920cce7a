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
from rein.engine import approvals
from rein.engine.evaluation import condition, diagnostic
from rein.engine.expressions import render
from rein.engine.kinds.attempt import AttemptOutcome
from rein.engine.node_steps import checkpoints
from rein.engine.outputs import check_outputs
from rein.engine.runtime import RunContext, ScopeInstance
from rein.engine.signals import CheckpointRejected
from rein.engine.transitions import transition
from rein.formats.ags.spec import SuccessSpec


async def exhausted(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any],
                    last: AttemptOutcome | None, *, failure: FailureClass | None,
                    blocked: bool = False) -> None:
    """Take the node from "out of attempts" to a terminal state."""
    state = inst.states[nid]
    block = inst.model.specs[nid].failure
    scope = inst.scope().with_self({"id": nid, "attempt": max(1, state.attempts),
                                    "inputs": state.inputs or {},
                                    "outputs": dict(last.outputs) if last else {}})
    if not blocked:
        for step in block.fallback:
            if step.get("when") and not condition(ctx, scope, str(step["when"]),
                                                  f"node {nid} fallback"):
                continue
            if await _fallback(ctx, inst, nid, node, step, last):
                state.record["fallback_used"] = str(step["strategy"])
                ctx.emit("node/fallback", {"node": inst.key(nid), "strategy": step["strategy"]})
                return
    reason = failure.value if failure else "failed"
    on_exhausted = block.on_exhausted
    if block.escalation is not None:
        # The ladder's own rung (§14): a declared escalation runs once the fallbacks are
        # spent, whatever on_exhausted says; on_exhausted then decides what an escalation
        # that handed nothing back leaves the node as (``escalate`` adds nothing more).
        if await escalate(ctx, inst, nid, node, reason=reason):
            return
    elif on_exhausted == "escalate":
        await escalate(ctx, inst, nid, node, reason=reason)  # refused at prepare (LADDER001)
    if on_exhausted == "skip":
        transition(state, NodeStatus.SKIPPED)
        state.record["skip_reason"] = "on_exhausted: skip"
        return
    elif on_exhausted == "succeed_degraded" and not blocked:
        state.outputs = dict(last.outputs) if last else {}
        transition(state, NodeStatus.SUCCEEDED)
        state.degraded = True
        diagnostic(ctx, "RT042", "warning", f"node {nid} ended succeed_degraded",
                   node=inst.key(nid))
        return
    state.unabsorbed = True
    if failure is not None:
        state.record["x-rein-failure-class"] = failure.value
    try:
        # Before the terminal status: a required checkpoint pauses the node, and a node
        # waiting for a person has not ended yet.
        await checkpoints(ctx, inst, nid, node, "on_failure", max(1, state.attempts),
                          this={"id": nid, "attempt": max(1, state.attempts),
                                "inputs": state.inputs or {}})
    except CheckpointRejected:
        pass  # the node fails either way; the answer is recorded as a human event
    transition(state, NodeStatus.BLOCKED if blocked else NodeStatus.FAILED)


async def _fallback(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any],
                    step: Mapping[str, Any], last: AttemptOutcome | None) -> bool:
    state = inst.states[nid]
    strategy = step.get("strategy")
    specs = node.get("outputs") or {}
    match strategy:
        case "alternate_node":
            return await _stand_in(ctx, inst, nid, str(step["node"]))
        case "degrade_outputs":
            keep = [str(o) for o in step.get("outputs") or []]
            if last is None or any(last.outputs.get(o) is None for o in keep):
                return False
            optional = frozenset(n for n in specs if n not in keep)
            if check_outputs({k: last.outputs[k] for k in keep}, specs,
                             workspace=ctx.workspace, optional=optional):
                return False
            state.outputs = {k: last.outputs[k] for k in keep}
            transition(state, NodeStatus.SUCCEEDED)
            return True
        case "relax_criteria":
            if last is None or last.success is None or last.failure is not FailureClass.CRITERIA_FAILED:
                return False
            relaxed = {str(c) for c in step.get("criteria") or []}
            if not _passes_relaxed(inst.model.specs[nid].success, last.success.results,
                                   relaxed):
                return False
            state.outputs = dict(last.outputs)
            transition(state, NodeStatus.SUCCEEDED)
            state.record["x-rein-relaxed"] = sorted(relaxed)
            return True
        case "human_takeover":
            return await _human_outputs(ctx, inst, nid, node, "takeover",
                                        str(step.get("description") or node.get("title", nid)))
        case "skip":
            transition(state, NodeStatus.SKIPPED)
            state.record["skip_reason"] = "fallback: skip"
            return True
    return False


def _passes_relaxed(block: SuccessSpec, results: Any, relaxed: set[str]) -> bool:
    required = [r for r in results if r.severity == "required" and r.id not in relaxed]
    passes = sum(1 for r in required if r.passed)
    if block.mode == "any":
        return passes >= 1
    if block.mode == "n_of":
        return passes >= block.count
    return passes == len(required)


async def _stand_in(ctx: RunContext, inst: ScopeInstance, nid: str, other: str) -> bool:
    """Run ``other`` in ``nid``'s place and adopt its outputs by name (§14.2)."""
    if other not in inst.model.nodes:
        return False
    view = inst.stand_in(other, nid)
    await ctx.execute_node(ctx, view, other)
    result = view.states[other]
    if result.status is not NodeStatus.SUCCEEDED:
        return False
    state = inst.states[nid]
    state.outputs = dict(result.outputs)
    transition(state, NodeStatus.SUCCEEDED)
    state.record["x-rein-stand-in"] = view.key(other)
    return True


async def _human_outputs(ctx: RunContext, inst: ScopeInstance, nid: str,
                         node: Mapping[str, Any], why: str, message: str,
                         roles: list[str] | None = None) -> bool:
    """A person supplies the node's outputs (takeover, or an escalation to a human)."""
    state = inst.states[nid]
    specs = node.get("outputs") or {}
    row = await approvals.ask(
        ctx, key=f"{why}:{inst.key(nid)}", kind=ApprovalKind.ESCALATION,
        request={"node": inst.key(nid), "mode": "input", "prompt": message,
                 "outputs": {k: {"type": v.get("type"), "description": v.get("description"),
                                 "required": v.get("required", True)}
                             for k, v in specs.items()},
                 "reason": why, **({"roles": roles} if roles else {})})
    values = dict((row.answer or {}).get("values") or {})
    accepted = row.status is ApprovalStatus.ACCEPTED
    state.record.setdefault("human_events", []).append(approvals.human_event(
        row, stage=why, mode="input", outcome="provided" if accepted and values else None))
    if not accepted:
        return False
    if not values and (specs or why == "escalation"):
        return False  # acknowledged, but nothing handed back: the node stays failed
    problems = check_outputs(values, specs, workspace=ctx.workspace)
    if problems:
        diagnostic(ctx, problems[0].code, "error", f"node {nid}: supplied outputs: "
                   + "; ".join(p.message for p in problems), node=inst.key(nid))
        return False
    state.outputs = values
    transition(state, NodeStatus.SUCCEEDED)
    return True


async def escalate(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any], *,
                   reason: str) -> bool:
    """Run ``failure.escalation``. True when it resolved the node (outputs handed back)."""
    state = inst.states[nid]
    esc = inst.model.specs[nid].failure.escalation
    if esc is None:
        diagnostic(ctx, "LADDER001", "warning", f"node {nid} asks to escalate but declares "
                   "no failure.escalation", node=inst.key(nid))
        return False
    state.record["escalated"] = True
    ctx.emit("node/escalated", {"node": inst.key(nid), "to": esc.get("to"), "reason": reason})
    try:
        await checkpoints(ctx, inst, nid, node, "on_escalation", max(1, state.attempts),
                          this={"id": nid, "attempt": max(1, state.attempts),
                                "inputs": state.inputs or {}, "outputs": state.outputs})
    except CheckpointRejected:
        return False
    scope = inst.scope().with_self({"id": nid, "attempt": max(1, state.attempts),
                                    "inputs": state.inputs or {}, "outputs": state.outputs})
    match esc.get("to"):
        case "human":
            message = render(str(esc.get("message") or f"{node.get('title', nid)}: {reason}"),
                             scope)
            return await _human_outputs(ctx, inst, nid, node, "escalation", message,
                                        [str(r) for r in esc.get("roles") or []])
        case "node":
            return await _stand_in(ctx, inst, nid, str(esc.get("node")))
        case other:
            diagnostic(ctx, "RUN000", "warning", f"node {nid}: escalation to {other!r} is "
                       "recorded but no such channel is configured", node=inst.key(nid))
            return False
