"""Task and decision nodes: attempts through a worker, checked by the harness (AGS §17.7).

A node first resolves its inputs and passes pre-flight (tier RT011, isolation RT014,
determinism RT013) before anything is spent, then its ``before_start`` (and, when it may
change something, ``before_side_effects``) checkpoints. Each attempt
(:mod:`rein.engine.run.kinds.attempt`) is retried under ``failure.retry``
(:mod:`rein.engine.run.kinds.attempt_end`) until one succeeds; exhaustion goes to the ladder.

The request a worker gets is built in :mod:`rein.engine.run.kinds.worker_call` and what the
criteria may look at in :mod:`rein.engine.run.kinds.criteria_context`; their public names are
importable from here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.states import AttemptStatus
from rein.engine.run import recovery
from rein.engine.run.criteria.evaluate import evaluate_success
from rein.engine.run.criteria.model import SuccessOutcome
from rein.engine.run.evaluation import condition, diagnostic
from rein.engine.run.graph import node_tier, tier_above
from rein.engine.run.kinds import ladder
from rein.engine.run.kinds.attempt import criteria_reason, run_attempt, status_for
from rein.engine.run.kinds.attempt_end import (
    AttemptEnd,
    AttemptOutcome,
    AttemptRecord,
    AttemptStart,
    adopted,
    backoff,
    failed_criteria,
    feedback_for,
    should_retry,
)
from rein.engine.run.kinds.criteria_context import criterion_context, judge_through_worker
from rein.engine.run.kinds.worker_call import build_request, is_mutating, node_env, pick_worker
from rein.engine.run.node_steps import checkpoints, resolve_inputs
from rein.engine.run.outcome import NodeOutcome, succeeded
from rein.engine.run.runtime import NodeAt
from rein.engine.run.signals import Blocked, CheckpointRejected, InputsMissing
from rein.errors import RoutingError
from rein.formats.ags.spec import DEFAULT_RETRY_ON, NodeSpec
from rein.workers.base import AttemptRequest, Feedback, Routed, Worker

__all__ = [
    "DEFAULT_RETRY_ON",
    "AttemptOutcome",
    "Blocked",
    "criterion_context",
    "judge_through_worker",
    "node_env",
    "pick_worker",
    "run_decision",
    "run_task",
]


async def run_task(here: NodeAt, spec: NodeSpec
                   ) -> NodeOutcome:
    """Run task node ``here.nid`` to the outcome it reaches (or a pause)."""
    return await _run_attempts(here, spec, kind="task")


async def run_decision(here: NodeAt, spec: NodeSpec
                       ) -> NodeOutcome:
    """Run decision node ``here.nid``: by expression, or as attempts of an agent."""
    block = spec.raw.get("decision") or {}
    if block.get("evaluator", "agent") == "expression":
        return await _expression_decision(here, spec, block)
    return await _run_attempts(here, spec, kind="decision")


async def _expression_decision(here: NodeAt,
                               spec: NodeSpec, block: Mapping[str, Any]) -> NodeOutcome:
    """First branch whose ``when`` is true in declared order, else the default (§7.2);
    then, as for any attempt, the harness evaluates ``success`` (§17.7: the expression
    replaces the agent, not the check), and a failed check goes through retries and the
    ladder."""
    state = here.state
    retry = spec.failure.retry
    try:
        state.inputs = resolve_inputs(here, spec.raw)
    except InputsMissing:
        here.run.root().env.budget.start_execution(here.env.clock.now())
        state.attempts = 1
        return await ladder.exhausted(here, spec, None,
                                      failure=FailureClass.OUTPUT_MISSING)
    last: AttemptOutcome | None = None
    for n in range(1, retry.max_attempts + 1):
        state.attempts = n
        last = adopted(state.record, spec, n)  # a run paused after it: taken as it ended
        if last is None:
            if n > 1:
                await here.env.sleep(backoff(retry, n, f"{here.env.run_id}:{here.key}:{n}"))
            last = await _decide(here, spec, block, n)
        if last.status is AttemptStatus.SUCCEEDED:
            return succeeded(last.outputs, decision=last.decision)
        if last.decision is None:
            break  # no branch matched: choosing again gives the same answer
        if await _stop_after(here, spec.raw, n, last) or \
                not should_retry(retry, last, n):
            break
    assert last is not None
    return await ladder.exhausted(here, spec, last, failure=last.failure)


async def _decide(here: NodeAt, spec: NodeSpec,
                  block: Mapping[str, Any], n: int) -> AttemptOutcome:
    """Attempt ``n`` of an expression decision: the label, then ``success`` on it."""
    state = here.state
    here.run.root().env.budget.start_execution(here.env.clock.now())
    rec = AttemptRecord(start=AttemptStart(
        attempt=n, started_at=here.run.now(),
        rerun=recovery.was_interrupted(here.run, here.key, n)))
    state.record = state.record.with_attempt(rec)
    scope = here.inst.scope().with_self({"id": here.nid, "attempt": n, "inputs": state.inputs})
    chosen = None
    for branch in block.get("branches") or []:
        if condition(here.run, scope, str(branch.get("when", "false")), f"node {here.nid} branch"):
            chosen = str(branch["label"])
            break
    chosen = chosen or block.get("default_branch")
    if chosen is None:
        error = "no branch matched and there is no default_branch"
        state.record = state.record.with_attempt(rec.replace(end=AttemptEnd(
            attempt=n, status=AttemptStatus.FAILED, finished_at=here.run.now(),
            failure=FailureClass.CRITERIA_FAILED, message=error)))
        return AttemptOutcome(status=AttemptStatus.FAILED,
                              failure=FailureClass.CRITERIA_FAILED, message=error)
    outputs = {"decision": chosen}
    check = spec.raw.get("success")
    success = SuccessOutcome(passed=True) if check is None else await evaluate_success(
        check, criterion_context(here, spec.raw, n, outputs))
    at = here.run.now()
    judged = success.to_record() if success.results else None
    if success.passed:
        state.record = state.record.with_attempt(rec.replace(end=AttemptEnd(
            attempt=n, status=AttemptStatus.SUCCEEDED, finished_at=at, success=judged)))
        return AttemptOutcome(status=AttemptStatus.SUCCEEDED, outputs=outputs,
                              success=success, decision=chosen)
    failure = FailureClass.TIMEOUT if success.timed_out else FailureClass.CRITERIA_FAILED
    status = status_for(failure)
    told = failed_criteria(success.to_record()["results"], spec.success)
    reason = criteria_reason(success, spec.success)
    state.record = state.record.with_attempt(rec.replace(end=AttemptEnd(
        attempt=n, status=status, finished_at=at, failure=failure, message=reason,
        success=judged, outputs=outputs)))
    return AttemptOutcome(
        status=status, failure=failure, outputs=outputs, success=success, decision=chosen,
        message=reason, feedback=told)


async def _run_attempts(here: NodeAt, spec: NodeSpec, *,
                        kind: str) -> NodeOutcome:
    node = spec.raw
    state = here.state
    retry = spec.failure.retry
    started = await _start(here, spec, kind)
    if isinstance(started, NodeOutcome):
        return started
    worker, routed, probe = started
    tier = node_tier(node)
    feedback: Feedback | None = None
    last: AttemptOutcome | None = None
    for n in range(1, retry.max_attempts + 1):
        earlier = adopted(state.record, spec, n)
        if n > 1:
            if earlier is None:  # an adopted attempt was followed by its wait already
                await here.env.sleep(backoff(retry, n, f"{here.env.run_id}:{here.key}:{n}"))
            if retry.escalate_intelligence:
                escalated = _escalate(here, node)
                if escalated is None:
                    break
                tier, routed = escalated
        if earlier is not None:
            state.attempts = n
        # Attempt 1's request is pre-flight's probe: built from the same node, inputs,
        # tier and route, with no feedback yet.
        last = earlier or await run_attempt(here, node, n, tier=tier, worker=worker,
                                            routed=routed, feedback=feedback, kind=kind,
                                            request=probe if n == 1 else None)
        if last.status is AttemptStatus.SUCCEEDED:
            return succeeded(last.outputs, decision=last.decision)
        if await _stop_after(here, node, n, last) or not should_retry(retry, last, n):
            break
        feedback = feedback_for(retry, last)
    return await ladder.exhausted(here, spec, last,
                                  failure=last.failure if last else FailureClass.TRANSIENT)


async def _start(here: NodeAt, spec: NodeSpec,
                 kind: str
                 ) -> tuple[Worker | None, Routed | None, AttemptRequest] | NodeOutcome:
    """Inputs, pre-flight and the opening checkpoints; the ladder's outcome instead when
    one of them stopped the node (inputs missing, blocked, or a person said no)."""
    node = spec.raw
    state = here.state
    try:
        state.inputs = resolve_inputs(here, node)
    except InputsMissing:
        return await ladder.exhausted(here, spec, None,
                                      failure=FailureClass.OUTPUT_MISSING)
    try:
        started = _preflight(here, node, node_tier(node), kind)
    except Blocked as blocked:
        diagnostic(here.run, blocked.code, "error", blocked.message, node=here.key)
        outcome = await ladder.exhausted(here, spec, None,
                                         failure=FailureClass.PERMISSION_DENIED, blocked=True)
        return outcome.noting(**{"x-rein-blocked": {"code": blocked.code,
                                                    "message": blocked.message}})
    this = {"id": here.nid, "attempt": 1, "inputs": state.inputs}
    try:
        await checkpoints(here, node, "before_start", 1, this=this)
        if is_mutating(node):
            # Workers without tool interception (scripted, driver) get this checkpoint
            # before the attempt starts: the first side effect cannot come earlier.
            await checkpoints(here, node, "before_side_effects", 1, this=this)
    except CheckpointRejected:
        return await ladder.exhausted(here, spec, None,
                                      failure=FailureClass.PERMISSION_DENIED)
    return started


def _escalate(here: NodeAt, node: Mapping[str, Any]
              ) -> tuple[str, Routed | None] | None:
    """The tier and route of a retry under ``escalate_intelligence`` (the route ``None``
    when the worker serves tiers itself); ``None`` (RT011) when nothing serves the tier
    above."""
    intel = node.get("intelligence") or {}
    tier = str(intel.get("escalate_to") or tier_above(node_tier(node)))
    try:
        return tier, here.env.router.route(tier, intel, node=here.nid)
    except RoutingError as exc:
        diagnostic(here.run, "RT011", "error", exc.message, node=here.key)
        return None


async def _stop_after(here: NodeAt, node: Mapping[str, Any],
                      n: int, last: AttemptOutcome) -> bool:
    """Whether failed attempt ``n`` ends the retries whatever ``retry_on`` says: a refused
    permission, or a person rejecting at ``on_criteria_failure``."""
    if last.failure is FailureClass.PERMISSION_DENIED:
        return True  # a person said no, or a permission refused: retrying changes nothing
    if last.failure is FailureClass.CRITERIA_FAILED:
        this = {"id": here.nid, "attempt": n, "inputs": here.state.inputs,
                "outputs": dict(last.outputs)}
        try:
            await checkpoints(here, node, "on_criteria_failure", n, this=this)
        except CheckpointRejected:
            return True
    return False


def _preflight(here: NodeAt, node: Mapping[str, Any],
               tier: str, kind: str
               ) -> tuple[Worker | None, Routed | None, AttemptRequest]:
    """AGS §17.7 step 2, before anything is spent: tier (RT011), isolation (RT014),
    determinism (RT013)."""
    try:
        routed = here.env.router.route(tier, node.get("intelligence"), node=here.nid)
    except RoutingError as exc:
        raise Blocked("RT011", exc.message) from exc
    constraints = node.get("constraints") or {}
    isolation = constraints.get("isolation", "shared")
    if isolation != "shared":
        raise Blocked("RT014", f"node {here.nid} asks for isolation {isolation!r}; this harness "
                      "offers only 'shared' and will not silently downgrade")
    probe = build_request(here, node, attempt=1, tier=tier, kind=kind, routed=routed)
    worker = pick_worker(here.run, probe)
    if constraints.get("determinism") == "strict" and worker is not None and not getattr(
            worker, "deterministic", False):
        raise Blocked("RT013", f"node {here.nid} asks for determinism: strict; worker "
                      f"{worker.name!r} cannot guarantee it")
    return worker, routed, probe
