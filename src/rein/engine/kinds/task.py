"""Task and decision nodes: attempts through a worker, checked by the harness (AGS §17.7).

One attempt: count it against the global ceiling, hand it to the first worker that can
serve it (none: the run pauses for one), stream its items into the trace, check the
declared outputs (RT031/RT032/RT033), present ``after_outputs`` checkpoints, then evaluate
``success``. A worker that reports a failure fails the attempt: its criteria are not
evaluated, so a file that happened to exist already cannot make it pass. Retries carry the
failed criteria's descriptions and evidence as feedback; exhaustion goes to the ladder.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rein.engine import approvals, recovery
from rein.engine.budget import node_budget_left
from rein.engine.criteria.base import CriterionProblem
from rein.engine.criteria.evaluate import evaluate_success
from rein.engine.criteria.model import (
    CriterionContext,
    HumanAnswer,
    HumanRequest,
    JudgeRequest,
    JudgeVerdict,
    SuccessOutcome,
)
from rein.engine.expressions import render
from rein.engine.graph import node_tier, tier_above
from rein.engine.kinds import ladder
from rein.engine.nodes import CheckpointRejected, InputsMissing, checkpoints, resolve_inputs
from rein.engine.outputs import check_outputs
from rein.engine.routing import select_worker
from rein.engine.runtime import Paused, RunContext, ScopeInstance
from rein.engine.scheduler import condition, diagnostic
from rein.errors import RoutingError
from rein.store.state import ApprovalKind, ApprovalStatus, AttemptStatus, NodeStatus
from rein.workers.base import (
    AttemptRequest,
    AttemptResult,
    FailureClass,
    Feedback,
    OutputSpec,
    Routed,
    Worker,
    WorkerPaused,
)

DEFAULT_RETRY_ON = ("transient", "tool_error", "criteria_failed")


@dataclass(frozen=True, kw_only=True, slots=True)
class AttemptOutcome:
    """How one attempt ended."""

    status: AttemptStatus
    failure: FailureClass | None = None
    outputs: Mapping[str, Any] = field(default_factory=dict)
    success: SuccessOutcome | None = None
    decision: str | None = None
    message: str | None = None
    feedback: tuple[Mapping[str, Any], ...] = ()  # failed criteria of an adopted attempt


class Blocked(Exception):
    """The node cannot start (RT011–RT015): ``blocked``, before anything is spent."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


async def run_task(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any]
                   ) -> None:
    await _run_attempts(ctx, inst, nid, node, kind="task")


async def run_decision(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any]
                       ) -> None:
    block = node.get("decision") or {}
    if block.get("evaluator", "agent") == "expression":
        await _expression_decision(ctx, inst, nid, node, block)
    else:
        await _run_attempts(ctx, inst, nid, node, kind="decision")


async def _expression_decision(ctx: RunContext, inst: ScopeInstance, nid: str,
                               node: Mapping[str, Any], block: Mapping[str, Any]) -> None:
    """First branch whose ``when`` is true in declared order, else the default (§7.2)."""
    state = inst.states[nid]
    ctx.root().budget.start_execution(ctx.clock.now())
    state.attempts = 1
    try:
        state.inputs = resolve_inputs(ctx, inst, nid, node)
    except InputsMissing:
        await ladder.exhausted(ctx, inst, nid, node, None, failure=FailureClass.OUTPUT_MISSING)
        return
    scope = inst.scope().with_self({"id": nid, "attempt": 1, "inputs": state.inputs})
    chosen = None
    for branch in block.get("branches") or []:
        if condition(ctx, scope, str(branch.get("when", "false")), f"node {nid} branch"):
            chosen = str(branch["label"])
            break
    chosen = chosen or block.get("default_branch")
    rec = {"attempt": 1, "started_at": ctx.now(), "finished_at": ctx.now()}
    state.record["attempts"] = [rec]
    if chosen is None:
        rec.update(status="failed", error="no branch matched and there is no default_branch")
        await ladder.exhausted(ctx, inst, nid, node, None, failure=FailureClass.CRITERIA_FAILED)
        return
    rec["status"] = "succeeded"
    state.decision = chosen
    state.outputs = {"decision": chosen}
    state.status = NodeStatus.SUCCEEDED


async def _run_attempts(ctx: RunContext, inst: ScopeInstance, nid: str,
                        node: Mapping[str, Any], *, kind: str) -> None:
    state = inst.states[nid]
    failure_block = node.get("failure") or {}
    retry = failure_block.get("retry") or {}
    try:
        state.inputs = resolve_inputs(ctx, inst, nid, node)
    except InputsMissing:
        await ladder.exhausted(ctx, inst, nid, node, None, failure=FailureClass.OUTPUT_MISSING)
        return
    tier = node_tier(node)
    try:
        worker, routed = _preflight(ctx, inst, nid, node, tier, kind)
    except Blocked as blocked:
        diagnostic(ctx, blocked.code, "error", blocked.message, node=inst.key(nid))
        state.record["x-rein-blocked"] = {"code": blocked.code, "message": blocked.message}
        await ladder.exhausted(ctx, inst, nid, node, None,
                               failure=FailureClass.PERMISSION_DENIED, blocked=True)
        return
    this = {"id": nid, "attempt": 1, "inputs": state.inputs}
    try:
        await checkpoints(ctx, inst, nid, node, "before_start", 1, this=this)
        if _mutating(node):
            # Workers without tool interception (scripted, driver) get this checkpoint
            # before the attempt starts: the first side effect cannot come earlier.
            await checkpoints(ctx, inst, nid, node, "before_side_effects", 1, this=this)
    except CheckpointRejected:
        await ladder.exhausted(ctx, inst, nid, node, None, failure=FailureClass.PERMISSION_DENIED)
        return
    max_attempts = int(retry.get("max_attempts", 1))
    retry_on = set(retry.get("retry_on", DEFAULT_RETRY_ON))
    feedback: Feedback | None = None
    last: AttemptOutcome | None = None
    for n in range(1, max_attempts + 1):
        adopted = _adopted(state, node, n)
        if n > 1:
            if adopted is None:  # an adopted attempt was followed by its wait already
                await ctx.sleep(_backoff(retry, n, f"{ctx.run_id}:{inst.key(nid)}:{n}"))
            if retry.get("escalate_intelligence"):
                intel = node.get("intelligence") or {}
                tier = str(intel.get("escalate_to") or tier_above(node_tier(node)))
                try:
                    routed = ctx.router.route(tier, intel, node=nid)
                except RoutingError as exc:
                    diagnostic(ctx, "RT011", "error", exc.message, node=inst.key(nid))
                    break
        if adopted is not None:
            state.attempts = n
        last = adopted or await _attempt(ctx, inst, nid, node, n, tier, worker, routed,
                                         feedback, kind)
        if last.status is AttemptStatus.SUCCEEDED:
            state.outputs = dict(last.outputs)
            if last.decision is not None:
                state.decision = last.decision
            state.status = NodeStatus.SUCCEEDED
            return
        if last.failure is FailureClass.PERMISSION_DENIED:
            break  # a person said no, or a permission refused: retrying changes nothing
        if last.failure is FailureClass.CRITERIA_FAILED:
            try:
                await checkpoints(ctx, inst, nid, node, "on_criteria_failure", n,
                                  this={**this, "attempt": n, "outputs": dict(last.outputs)})
            except CheckpointRejected:
                break
        if n < max_attempts and ("any" in retry_on or (last.failure or "") in retry_on):
            feedback = _feedback(retry, last)
            continue
        break
    await ladder.exhausted(ctx, inst, nid, node, last,
                           failure=last.failure if last else FailureClass.TRANSIENT)


def _preflight(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any],
               tier: str, kind: str) -> tuple[Worker | None, Routed | None]:
    """AGS §17.7 step 2, before anything is spent: tier (RT011), isolation (RT014),
    determinism (RT013)."""
    try:
        routed = ctx.router.route(tier, node.get("intelligence"), node=nid)
    except RoutingError as exc:
        raise Blocked("RT011", exc.message) from exc
    constraints = node.get("constraints") or {}
    isolation = constraints.get("isolation", "shared")
    if isolation != "shared":
        raise Blocked("RT014", f"node {nid} asks for isolation {isolation!r}; this harness "
                      "offers only 'shared' and will not silently downgrade")
    worker = pick_worker(ctx, _with_route(_probe(ctx, inst, nid, node, tier, kind), routed))
    if constraints.get("determinism") == "strict" and worker is not None and not getattr(
            worker, "deterministic", False):
        raise Blocked("RT013", f"node {nid} asks for determinism: strict; worker "
                      f"{worker.name!r} cannot guarantee it")
    return worker, routed


def pick_worker(ctx: RunContext, request: AttemptRequest) -> Worker | None:
    return select_worker(ctx.workers, request)


def _probe(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any], tier: str,
           kind: str) -> AttemptRequest:
    return _request(ctx, inst, nid, node, 1, tier, None, kind, None)


def _request(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any], n: int,
             tier: str, feedback: Feedback | None, kind: str, budget: Any) -> AttemptRequest:
    state = inst.states[nid]
    req = node.get("requirements") or {}
    scope = inst.scope().with_self({"id": nid, "attempt": n, "inputs": state.inputs or {}})
    brief = str(node.get("description", ""))
    if node.get("instructions"):
        brief += "\n\n" + render(str(node["instructions"]), scope)
    if kind == "decision":
        question = (node.get("decision") or {}).get("question")
        if question:
            brief += "\n\n" + render(str(question), scope)
    specs = node.get("outputs") or {}
    outputs = tuple(
        OutputSpec(name=name, type=str(s.get("type", "any")),
                   description=str(s.get("description", "")),
                   required=bool(s.get("required", True)), path_hint=s.get("path_hint"),
                   schema=s.get("schema"))
        for name, s in specs.items()
    )
    env, secret_names = node_env(ctx, node)
    tools = tuple(t if isinstance(t, str) else str(t.get("name")) for t in req.get("tools") or [])
    branches = tuple({"label": b["label"], "description": b.get("description", "")}
                     for b in (node.get("decision") or {}).get("branches") or [])
    extra = {"budget": budget} if budget is not None else {}
    checks = tuple(
        {"id": str(c.get("id", "")), "kind": str(c.get("kind", "")),
         "description": str(c.get("description", "")),
         "severity": str(c.get("severity", "required"))}
        for c in (node.get("success") or {}).get("criteria") or [] if isinstance(c, Mapping))
    return AttemptRequest(
        run_id=ctx.run_id, node_id=inst.key(nid), attempt=n, kind=kind,  # type: ignore[arg-type]
        title=str(node.get("title", nid)), brief=brief, inputs=dict(state.inputs or {}),
        outputs=outputs, permissions=tuple(req.get("permissions") or ()), tools=tools,
        workspace=str(ctx.workspace), workspace_access=req.get("workspace", "read_only"),
        network=req.get("network", "none"), env=env, secret_names=secret_names,
        tier=tier,  # type: ignore[arg-type]
        feedback=feedback, branches=branches, checks=checks,
        constraints=dict(node.get("constraints") or {}), **extra,
        profile=node.get("x-rein-profile"), worker=node.get("x-rein-worker"),
    )


def node_env(ctx: RunContext, node: Mapping[str, Any]) -> tuple[dict[str, str], frozenset[str]]:
    """Declared environment names and secrets — only what the node lists (AGS §12)."""
    req = node.get("requirements") or {}
    env = {name: ctx.env[name] for name in req.get("environment") or [] if name in ctx.env}
    secret_names = set()
    for name in req.get("secrets") or []:
        if name in ctx.secrets:
            env[name] = ctx.secrets[name]
            secret_names.add(name)
    return env, frozenset(secret_names)


async def _attempt(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any],
                   n: int, tier: str, worker: Worker | None, routed: Routed | None,
                   feedback: Feedback | None, kind: str) -> AttemptOutcome:
    state = inst.states[nid]
    root = ctx.root()
    now = ctx.clock.now()
    constraints = node.get("constraints") or {}
    budget = root.budget.attempt_budget(constraints, state.spent, now)
    request = _with_route(_request(ctx, inst, nid, node, n, tier, feedback, kind, None), routed)
    if worker is None or not worker.can_serve(request):
        worker = pick_worker(ctx, request)
    if worker is None:
        ctx.emit("worker/unavailable", {"node": inst.key(nid), "attempt": n, "tier": tier})
        raise Paused("worker", {"node": inst.key(nid), "attempt": n})
    # Attempt n was in flight when an earlier rein died: it runs again under its number,
    # unless a person declines (irreversible, or past before_side_effects).
    rerun = recovery.was_interrupted(ctx, inst.key(nid), n)
    declined = rerun and not await recovery.may_rerun(ctx, inst.key(nid), n, node,
                                                      mutating=_mutating(node))
    root.budget.start_execution(now)
    state.attempts = n
    rec: dict[str, Any] = {"attempt": n, "started_at": ctx.now()}
    if rerun:
        rec[recovery.RERUN] = True
    state.record.setdefault("attempts", []).append(rec)
    # Saved with the node row: a crash from here on leaves the attempt on record as in
    # flight, which is how resume knows to run it again under this number.
    ctx.save_node(inst, nid, "attempt/started", {"attempt": n, "tier": tier,
                                                 "worker": worker.name})
    if declined:
        return _close(ctx, inst, nid, rec, AttemptOutcome(
            status=AttemptStatus.FAILED, failure=FailureClass.PERMISSION_DENIED,
            message="re-running the interrupted attempt was declined"), None)
    over = node_budget_left(constraints, state.spent)
    if over:
        return _close(ctx, inst, nid, rec, AttemptOutcome(
            status=AttemptStatus.BUDGET_EXCEEDED, failure=FailureClass.BUDGET_EXCEEDED,
            message=f"node limit {over}"), None)
    request = _with_route(_request(ctx, inst, nid, node, n, tier, feedback, kind, None), routed)
    request = _with_budget(request, budget)
    request = _with_session(ctx, request, worker)
    result = await _drive(ctx, inst, nid, worker, request)
    state.spent.add(result.usage)
    root.budget.spent.add(result.usage)
    rec["usage"] = _usage(result)
    chosen_route = result.routed or routed or Routed(
        requested_tier=tier, effective_tier=tier,  # type: ignore[arg-type]
        provider=worker.name, model=worker.name)
    rec["routed"] = {k: v for k, v in {
        "requested_tier": chosen_route.requested_tier, "effective_tier": chosen_route.effective_tier,
        "provider": chosen_route.provider, "model": chosen_route.model,
        "downgraded": chosen_route.downgraded, "reason": chosen_route.reason}.items()
        if v is not None}
    # A worker's own record fields (x-rein-profile, x-rein-ignored-keys, ...).
    rec.update({k: v for k, v in result.extra.items() if str(k).startswith("x-")})
    if result.failure is not None:
        return _close(ctx, inst, nid, rec, AttemptOutcome(
            status=_status_for(result.failure), failure=result.failure,
            outputs=result.outputs, message=result.message or result.failure.value), None)
    outputs = dict(result.outputs)
    decision = None
    if kind == "decision":
        decision, problem = _decision_label(ctx, inst, nid, node, result.decision)
        if problem:
            return _close(ctx, inst, nid, rec, AttemptOutcome(
                status=AttemptStatus.CRITERIA_FAILED, failure=FailureClass.CRITERIA_FAILED,
                outputs=outputs, message=problem), None)
    problems = check_outputs(outputs, node.get("outputs") or {}, workspace=ctx.workspace)
    if problems:
        for p in problems:
            diagnostic(ctx, p.code, "error", f"node {nid}: {p.message}", node=inst.key(nid))
        missing = any(p.code == "RT033" for p in problems)
        return _close(ctx, inst, nid, rec, AttemptOutcome(
            status=AttemptStatus.FAILED,
            failure=FailureClass.OUTPUT_MISSING if missing else FailureClass.VALIDATION_ERROR,
            outputs=outputs, message="; ".join(p.message for p in problems)), None)
    this = {"id": nid, "attempt": n, "inputs": state.inputs or {}, "outputs": outputs}
    try:
        await checkpoints(ctx, inst, nid, node, "after_outputs", n, this=this)
    except CheckpointRejected as exc:
        return _close(ctx, inst, nid, rec, AttemptOutcome(
            status=AttemptStatus.FAILED, failure=FailureClass.PERMISSION_DENIED,
            outputs=outputs, message=str(exc)), None)
    if decision is not None:
        outputs["decision"] = decision
    success = await evaluate_success(
        node.get("success"), criterion_context(ctx, inst, nid, node, n, outputs))
    if not success.passed:
        failure = FailureClass.TIMEOUT if success.timed_out else FailureClass.CRITERIA_FAILED
        return _close(ctx, inst, nid, rec, AttemptOutcome(
            status=_status_for(failure), failure=failure, outputs=outputs, success=success,
            decision=decision, message="success criteria failed"), success)
    return _close(ctx, inst, nid, rec, AttemptOutcome(
        status=AttemptStatus.SUCCEEDED, outputs=outputs, success=success, decision=decision),
        success)


def _with_route(request: AttemptRequest, routed: Routed | None) -> AttemptRequest:
    import dataclasses

    return request if routed is None else dataclasses.replace(request, routed=routed)


def _with_session(ctx: RunContext, request: AttemptRequest, worker: Worker) -> AttemptRequest:
    """Saved state and the approval queue for this attempt (a tool call in ``ask`` waits)."""
    import dataclasses

    from rein.engine.attempt_session import EngineSession

    return dataclasses.replace(request, session=EngineSession(
        ctx=ctx, node_key=request.node_id, attempt=request.attempt, worker=worker.name))


def _with_budget(request: AttemptRequest, budget: Any) -> AttemptRequest:
    import dataclasses

    return dataclasses.replace(request, budget=budget)


async def _drive(ctx: RunContext, inst: ScopeInstance, nid: str, worker: Worker,
                 request: AttemptRequest) -> AttemptResult:
    result: AttemptResult | None = None
    try:
        async for item in worker.run(request):
            if isinstance(item, AttemptResult):
                result = item
                break
            ctx.emit("item", {"node": inst.key(nid), "attempt": request.attempt,
                              "kind": item.kind.value, "data": dict(item.data)})
    except WorkerPaused as pause:
        reason = "worker" if pause.reason == "driver" else "human"
        raise Paused(reason, {"node": inst.key(nid), "token": pause.token, **pause.detail}
                     ) from pause
    if result is None:
        return AttemptResult(failure=FailureClass.MODEL_ERROR,
                             message=f"worker {worker.name!r} ended without a result")
    return result


def _close(ctx: RunContext, inst: ScopeInstance, nid: str, rec: dict[str, Any],
           outcome: AttemptOutcome, success: SuccessOutcome | None) -> AttemptOutcome:
    rec["status"] = outcome.status.value
    rec["finished_at"] = ctx.now()
    if success is not None and success.results:
        rec["success"] = success.to_record()
    if outcome.failure is not None:
        rec["error"] = f"{outcome.failure.value}: {outcome.message or ''}".rstrip(": ")
        rec["x-rein-failure-class"] = outcome.failure.value
        specs = inst.model.nodes[nid].get("outputs") or {}
        kept = {k: v for k, v in outcome.outputs.items()
                if not (isinstance(specs.get(k), Mapping) and specs[k].get("redact"))}
        if kept:
            # A replay that adopts this attempt needs what it produced: checkpoint material,
            # degrade_outputs, succeed_degraded. Redacted values are never written.
            rec["x-rein-outputs"] = kept
    ctx.save_node(inst, nid, "attempt/finished",
                  {"attempt": rec["attempt"], "result": outcome.status.value,
                   "failure": outcome.failure.value if outcome.failure else None})
    return outcome


def _status_for(failure: FailureClass) -> AttemptStatus:
    return {
        FailureClass.TIMEOUT: AttemptStatus.TIMEOUT,
        FailureClass.BUDGET_EXCEEDED: AttemptStatus.BUDGET_EXCEEDED,
        FailureClass.CRITERIA_FAILED: AttemptStatus.CRITERIA_FAILED,
    }.get(failure, AttemptStatus.FAILED)


def _usage(result: AttemptResult) -> dict[str, Any]:
    u = result.usage
    out: dict[str, Any] = {"tool_calls": u.tool_calls}
    if u.input_tokens is not None:
        out["input_tokens"] = u.input_tokens
    if u.output_tokens is not None:
        out["output_tokens"] = u.output_tokens
    if u.total_tokens is not None:
        out["total_tokens"] = u.total_tokens
    if u.cost_usd is not None:
        out["cost_usd"] = u.cost_usd
    return out


def _decision_label(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any],
                    label: str | None) -> tuple[str | None, str | None]:
    block = node.get("decision") or {}
    labels = [b["label"] for b in block.get("branches") or []]
    if label in labels:
        return label, None
    default = block.get("default_branch")
    if default:
        diagnostic(ctx, "RT022", "warning", f"node {nid}: label {label!r} is not one of "
                   f"{labels}; default branch {default!r} used", node=inst.key(nid))
        return str(default), None
    return None, f"label {label!r} is not one of {labels} and there is no default_branch"


def _feedback(retry: Mapping[str, Any], last: AttemptOutcome) -> Feedback | None:
    mode = retry.get("feedback", "failed_criteria")
    if mode == "none":
        return None
    failure = last.failure or FailureClass.CRITERIA_FAILED
    summary = last.message or failure.value
    if mode == "failure_summary" or (last.success is None and not last.feedback):
        return Feedback(failure_class=failure, summary=summary)
    failed = last.feedback if last.success is None else tuple(last.success.feedback())
    return Feedback(failure_class=failure, summary=summary, failed_criteria=failed)


def _adopted(state: Any, node: Mapping[str, Any], n: int) -> AttemptOutcome | None:
    """Attempt ``n`` as an earlier process closed it, when the run paused after it.

    A run continues by replay, and a node that was retrying is scheduled again from its
    first attempt. An attempt that already ended in failure is taken from the record as it
    ended (its work was done, its criteria judged) instead of being run and judged again
    against a workspace that later attempts have changed.
    """
    for rec in state.record.get("attempts") or []:
        if rec.get("attempt") != n or rec.get("status") in (None, "succeeded"):
            continue
        error = str(rec.get("error") or "")
        criteria = {c.get("id"): c for c in (node.get("success") or {}).get("criteria") or []
                    if isinstance(c, Mapping)}
        failed = [r for r in (rec.get("success") or {}).get("results") or []
                  if not r.get("passed")]
        failed.sort(key=lambda r: r.get("severity") == "advisory")  # required ones first
        feedback = tuple(
            {"id": r.get("id"), "kind": r.get("kind"), "severity": r.get("severity"),
             "description": (criteria.get(r.get("id")) or {}).get("description", ""),
             "evidence": r.get("evidence"), **({"error": r["error"]} if r.get("error") else {})}
            for r in failed)
        return AttemptOutcome(
            status=AttemptStatus(rec["status"]),
            failure=FailureClass(rec.get("x-rein-failure-class") or "criteria_failed"),
            message=error.split(": ", 1)[1] if ": " in error else (error or None),
            outputs=dict(rec.get("x-rein-outputs") or {}), feedback=feedback)
    return None


def _backoff(retry: Mapping[str, Any], n: int, seed: str) -> float:
    """Delay before attempt ``n`` ≥ 2 (AGS leaves the formula open; see docs/ambiguities.md)."""
    initial = float(retry.get("initial_delay_seconds", 2))
    cap = float(retry.get("max_delay_seconds", 60))
    match retry.get("backoff", "exponential"):
        case "none":
            delay = 0.0
        case "fixed":
            delay = initial
        case "linear":
            delay = initial * (n - 1)
        case _:
            delay = initial * 2 ** (n - 2)
    delay = min(delay, cap)
    if retry.get("jitter", True) and delay > 0:
        delay = random.Random(seed).uniform(0, delay)  # seeded: the same run waits the same
    return delay


def _mutating(node: Mapping[str, Any]) -> bool:
    req = node.get("requirements") or {}
    perms = [str(p) for p in req.get("permissions") or []]
    return req.get("workspace") == "read_write" or any(
        p.startswith(("fs:write", "fs:delete", "git:commit", "git:push", "shell:exec"))
        for p in perms) or bool(req.get("secrets"))


def criterion_context(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any],
                      n: int, outputs: Mapping[str, Any]) -> CriterionContext:
    """What the criteria of one attempt may look at, with the approval queue and judges."""
    state = inst.states[nid]
    key = inst.key(nid)
    env, _ = node_env(ctx, node)
    scope = inst.scope().with_self(
        {"id": nid, "attempt": n, "inputs": state.inputs or {}, "outputs": dict(outputs)})

    async def ask_human(req: HumanRequest) -> HumanAnswer:
        row = await approvals.ask(
            ctx, key=f"criterion:{key}#{n}:{req.criterion_id}", kind=ApprovalKind.CRITERION,
            request={"node": key, "criterion": req.criterion_id, "prompt": req.prompt,
                     "description": req.description, "roles": list(req.roles),
                     "attempt": n, "digest": req.digest})
        answer = row.answer or {}
        state.record.setdefault("human_events", []).append(approvals.human_event(
            row, stage="success", mode="approve", checkpoint_id=req.criterion_id))
        return HumanAnswer(approved=row.status is ApprovalStatus.ACCEPTED,
                           note=answer.get("note"), reviewer=answer.get("actor"))

    async def judge(req: JudgeRequest) -> JudgeVerdict:
        return await judge_through_worker(ctx, inst, nid, node, req)

    return CriterionContext(
        workspace=ctx.workspace, node_id=key, attempt=n, outputs=dict(outputs),
        output_specs=dict(node.get("outputs") or {}), scope=scope,
        permissions=tuple((node.get("requirements") or {}).get("permissions") or ()),
        env={**{k: v for k, v in os.environ.items() if k == "PATH"}, **env},
        secret_values=ctx.secret_values, ask_human=ask_human, judge=judge,
        checkers=ctx.checkers, clock=ctx.clock.now,
    )


async def judge_through_worker(ctx: RunContext, inst: ScopeInstance, nid: str,
                               node: Mapping[str, Any], req: JudgeRequest) -> JudgeVerdict:
    """An ``llm_judge`` sample as a worker attempt of kind ``judge``."""
    intel = req.judge_intelligence or node.get("intelligence") or {}
    tier = str(intel.get("tier", node_tier(node)))
    request = AttemptRequest(
        run_id=ctx.run_id, node_id=f"{inst.key(nid)}:{req.criterion_id}", attempt=req.attempt,
        kind="judge", title=f"judge {req.criterion_id} (sample {req.sample}/{req.samples})",
        brief=req.rubric, inputs={"material": list(req.inputs)}, outputs=(
            OutputSpec(name="score", type="number", description="score in [0, 1]"),
            OutputSpec(name="reasoning", type="text", description="why")),
        permissions=(), tools=(), workspace=str(ctx.workspace),
        tier=tier,  # type: ignore[arg-type]
    )
    worker = pick_worker(ctx, request)
    if worker is None:
        raise CriterionProblem(  # a failed criterion, not a wait: nothing here can judge
            f"no configured worker can judge {req.criterion_id!r} at tier {tier!r}",
            code="CRIT003", hint="configure a model worker for that tier, or make the "
            "criterion advisory")
    result = await _drive(ctx, inst, nid, worker, request)
    ctx.root().budget.spent.add(result.usage)
    score = result.outputs.get("score")
    if result.failure is not None or not isinstance(score, (int, float)):
        raise CriterionProblem(f"judge worker {worker.name!r} gave no score in [0, 1]"
                               + (f" ({result.message})" if result.message else ""),
                               code="CRIT005")
    return JudgeVerdict(score=float(score), reasoning=str(result.outputs.get("reasoning", "")),
                        instance=f"{worker.name}:{tier}")
