"""One attempt of a task or decision node: run through a worker, checked, recorded.

The attempt is counted against the global ceiling and put on record as in flight before the
worker is called, so a process that dies mid-attempt leaves it there for resume to run
again under the same number. The worker's result is then checked by the harness: a worker
that reports a failure fails the attempt (its criteria are not evaluated, so a file that
happened to exist already cannot make it pass); otherwise the declared outputs
(RT031/RT032/RT033), a decision's label (RT022), the ``after_outputs`` checkpoints and
finally ``success``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.states import AttemptStatus
from rein.engine.events import EventType
from rein.engine.run import recovery
from rein.engine.run.budget import node_budget_left, node_overrun
from rein.engine.run.criteria.evaluate import evaluate_success
from rein.engine.run.criteria.model import SuccessOutcome
from rein.engine.run.evaluation import diagnostic
from rein.engine.run.kinds.attempt_end import (
    GENERIC,
    AttemptEnd,
    AttemptOutcome,
    AttemptRecord,
    AttemptServed,
    AttemptStart,
    error_text,
    failed_criteria,
)
from rein.engine.run.kinds.criteria_context import criterion_context
from rein.engine.run.kinds.worker_call import (
    build_request,
    drive,
    is_mutating,
    pick_worker,
    with_session,
)
from rein.engine.run.node_steps import checkpoints
from rein.engine.run.outputs import check_outputs
from rein.engine.run.runtime import NodeAt
from rein.engine.run.signals import CheckpointRejected, Paused
from rein.formats.ags.spec import SuccessSpec
from rein.workers.base import AttemptRequest, AttemptResult, Feedback, Routed, Worker

# Why the criteria failed, in one line: the reason the attempt's record, its events and
# the live view give (``criterion tests failed (...): exit 1: 2 failed``), built from the
# typed results as the next attempt is told them (required ones first), so evidence a
# criterion does not record is never named here either.
_EVIDENCE = 160  # characters of evidence in the line; the record keeps all of it


def criteria_reason(success: SuccessOutcome, spec: SuccessSpec) -> str:
    """The first failed criterion (required ones come first), its description and its
    evidence; the others by id."""
    failed = [r for r in success.results if not r.passed]
    failed.sort(key=lambda r: r.severity == "advisory")
    if not failed:
        return GENERIC
    first = failed[0]
    text = f"criterion {first.id} failed"
    description = spec.described().get(first.id, "")
    if description:
        text += f" ({_one_line(str(description))})"
    evidence = evidence_line(first.error or (first.evidence if first.record_evidence
                                             else None))
    if evidence:
        text += f": {evidence}"
    others = [r.id for r in failed[1:]]
    if others:
        text += f"; also failed: {', '.join(others)}"
    return text


def evidence_line(evidence: str | Mapping[str, Any] | None) -> str:
    """Evidence as one short line: a command's exit code and the last line it printed (its
    summary, for a test run); a text on one line; anything else as compact JSON. Text is
    text: it is never parsed for structure."""
    if evidence is None or evidence == "":
        return ""
    if isinstance(evidence, Mapping) and "exit_code" in evidence:
        text = "timed out" if evidence.get("timed_out") else f"exit {evidence.get('exit_code')}"
        if evidence.get("stdout_matched") is False:
            text += ", stdout did not match"
        last = _last_line(evidence.get("stdout")) or _last_line(evidence.get("stderr"))
        return _cut(f"{text}: {last}" if last else text)
    if isinstance(evidence, str):
        return _cut(_one_line(evidence))
    try:
        return _cut(json.dumps(evidence, ensure_ascii=False, sort_keys=True, default=str))
    except (TypeError, ValueError):
        return _cut(_one_line(str(evidence)))


def _last_line(value: Any) -> str:
    lines = [line.strip() for line in str(value or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str) -> str:
    return text if len(text) <= _EVIDENCE else text[:_EVIDENCE - 1] + "…"


async def run_attempt(here: NodeAt, node: Mapping[str, Any],
                      n: int, *, tier: str, worker: Worker | None, routed: Routed | None,
                      feedback: Feedback | None, kind: str,
                      request: AttemptRequest | None = None) -> AttemptOutcome:
    """Attempt ``n`` of node ``here.nid``, start to finish; the run pauses when no worker can
    serve it (``Paused("worker")``) or the worker waits for someone. ``request``: this very
    attempt's request when the caller built it already (pre-flight's probe of attempt 1)."""
    state = here.state
    root = here.run.root()
    now = here.env.clock.now()
    constraints = node.get("constraints") or {}
    budget = root.env.budget.attempt_budget(constraints, state.spent, now)
    if request is None:
        request = build_request(here, node, attempt=n, tier=tier, kind=kind,
                                feedback=feedback, routed=routed)
    worker = _serving_worker(here, request, worker)
    rec, declined = await _open(here, node, n, tier, worker, now)
    if declined:
        return close(here, rec, AttemptOutcome(
            status=AttemptStatus.FAILED, failure=FailureClass.PERMISSION_DENIED,
            message="re-running the interrupted attempt was declined"), None)
    over = node_budget_left(constraints, state.spent)
    if over:
        return close(here, rec, AttemptOutcome(
            status=AttemptStatus.BUDGET_EXCEEDED, failure=FailureClass.BUDGET_EXCEEDED,
            message=f"node limit {over}"), None)
    request = with_session(here.run, request, worker, budget=budget)
    result = await drive(here, worker, request)
    rec = _account(here, rec, result, routed or Routed(
        requested_tier=tier, effective_tier=tier,  # type: ignore[arg-type]
        provider=worker.name, model=worker.name))
    over = node_overrun(constraints, state.spent, result.usage)
    if over and result.failure is not FailureClass.BUDGET_EXCEEDED:
        # What was produced past the node's limit is not accepted, whatever the worker says.
        return close(here, rec, AttemptOutcome(
            status=AttemptStatus.BUDGET_EXCEEDED, failure=FailureClass.BUDGET_EXCEEDED,
            outputs=result.outputs, message=f"node limit {over}"), None)
    if result.failure is not None:
        return close(here, rec, AttemptOutcome(
            status=status_for(result.failure), failure=result.failure,
            outputs=result.outputs, message=result.message or result.failure.value), None)
    # An attempt run on another machine has its command criteria run there too.
    where = getattr(worker, "commands", None)
    commands = where(result) if callable(where) else None
    return await _checked(here, node, n, kind, rec, result, commands)


def _serving_worker(here: NodeAt, request: AttemptRequest,
                    worker: Worker | None) -> Worker:
    """The pre-flight's worker when it still serves the request, else the first that does."""
    if worker is None or not worker.can_serve(request):
        worker = pick_worker(here.run, request)
    if worker is None:
        here.run.emit(EventType.WORKER_UNAVAILABLE, {"node": here.key, "attempt": request.attempt,
                                                     "tier": request.tier})
        raise Paused("worker", {"node": here.key, "attempt": request.attempt})
    return worker


async def _open(here: NodeAt, node: Mapping[str, Any],
                n: int, tier: str, worker: Worker, now: Any) -> tuple[AttemptRecord, bool]:
    """Count attempt ``n`` and put it on record as in flight; ``declined`` when it is the
    re-run of an interrupted attempt that a person declined."""
    state = here.state
    # Attempt n was in flight when an earlier rein died: it runs again under its number,
    # unless a person declines (irreversible, or past before_side_effects).
    rerun = recovery.was_interrupted(here.run, here.key, n)
    declined = rerun and not await recovery.may_rerun(here.run, here.key, n, node,
                                                      mutating=is_mutating(node))
    here.run.root().env.budget.start_execution(now)
    state.attempts = n
    at = here.run.now()
    rec = AttemptRecord(start=AttemptStart(attempt=n, started_at=at, rerun=rerun))
    state.record = state.record.with_attempt(rec)
    # Saved with the node row: a crash from here on leaves the attempt on record as in
    # flight, which is how resume knows to run it again under this number.
    here.save(EventType.ATTEMPT_STARTED, {"attempt": n, "tier": tier,
                                          "worker": worker.name}, at=at)
    return rec, declined


def _account(here: NodeAt, rec: AttemptRecord,
             result: AttemptResult, fallback: Routed) -> AttemptRecord:
    """What the attempt spent, where it was served, and the worker's own record fields."""
    here.state.spent.add(result.usage)
    here.run.spend(result.usage)
    route = result.routed or fallback
    served = rec.replace(served=AttemptServed(usage=usage_record(result), routed={
        k: v for k, v in {
            "requested_tier": route.requested_tier, "effective_tier": route.effective_tier,
            "provider": route.provider, "model": route.model,
            "downgraded": route.downgraded, "reason": route.reason}.items() if v is not None},
        extra=result.extra))
    here.state.record = here.state.record.with_attempt(served)
    return served


async def _checked(here: NodeAt, node: Mapping[str, Any],
                   n: int, kind: str, rec: AttemptRecord, result: AttemptResult,
                   commands: Any = None) -> AttemptOutcome:
    """The harness's own checks of a result the worker calls done, in order."""
    state = here.state
    outputs = dict(result.outputs)
    decision = None
    if kind == "decision":
        decision, problem = decision_label(here, node, result.decision)
        if problem:
            return close(here, rec, AttemptOutcome(
                status=AttemptStatus.CRITERIA_FAILED, failure=FailureClass.CRITERIA_FAILED,
                outputs=outputs, message=problem), None)
    problems = check_outputs(outputs, node.get("outputs") or {}, workspace=here.env.workspace)
    if problems:
        for p in problems:
            diagnostic(here.run, p.code, "error", f"node {here.nid}: {p.message}", node=here.key)
        missing = any(p.code == "RT033" for p in problems)
        return close(here, rec, AttemptOutcome(
            status=AttemptStatus.FAILED,
            failure=FailureClass.OUTPUT_MISSING if missing else FailureClass.VALIDATION_ERROR,
            outputs=outputs, message="; ".join(p.message for p in problems)), None)
    this = {"id": here.nid, "attempt": n, "inputs": state.inputs or {}, "outputs": outputs}
    try:
        await checkpoints(here, node, "after_outputs", n, this=this)
    except CheckpointRejected as exc:
        return close(here, rec, AttemptOutcome(
            status=AttemptStatus.FAILED, failure=FailureClass.PERMISSION_DENIED,
            outputs=outputs, message=str(exc)), None)
    if decision is not None:
        outputs["decision"] = decision
    block = node.get("success")
    # No success block passes (evaluate_success says so too): nothing to build a context for.
    success = SuccessOutcome(passed=True) if block is None else await evaluate_success(
        block, criterion_context(here, node, n, outputs, commands))
    if not success.passed:
        failure = FailureClass.TIMEOUT if success.timed_out else FailureClass.CRITERIA_FAILED
        declared = here.spec.success
        told = failed_criteria(success.to_record()["results"], declared)
        return close(here, rec, AttemptOutcome(
            status=status_for(failure), failure=failure, outputs=outputs, success=success,
            decision=decision, message=criteria_reason(success, declared), feedback=told),
            success)
    return close(here, rec, AttemptOutcome(
        status=AttemptStatus.SUCCEEDED, outputs=outputs, success=success, decision=decision),
        success)


def close(here: NodeAt, rec: AttemptRecord,
          outcome: AttemptOutcome, success: SuccessOutcome | None) -> AttemptOutcome:
    """Finish the attempt's record with ``outcome`` and save it with the node."""
    specs = here.node.get("outputs") or {}
    # A replay that adopts a failed attempt needs what it produced: checkpoint material,
    # degrade_outputs, succeed_degraded. Redacted values are never written.
    kept = {} if outcome.failure is None else {
        k: v for k, v in outcome.outputs.items()
        if not (isinstance(specs.get(k), Mapping) and specs[k].get("redact"))}
    end = AttemptEnd(attempt=rec.attempt, status=outcome.status, finished_at=here.run.now(),
                     failure=outcome.failure, message=outcome.message,
                     success=success.to_record() if success is not None and success.results
                     else None, outputs=kept)
    here.state.record = here.state.record.with_attempt(rec.replace(end=end))
    at = end.finished_at
    # The reason and the usage ride on the event, so a live view (`rein run`, `rein runs
    # watch`) shows a failed attempt and the budget spent from the log alone. Held: the
    # node's end (or the next attempt, or the ladder) follows and commits both; lost in a
    # crash, the attempt was in flight, and resuming runs it again.
    usage = None if rec.served is None else rec.served.usage
    here.save(EventType.ATTEMPT_FINISHED,
              {"attempt": rec.attempt, "result": outcome.status.value,
               "failure": outcome.failure.value if outcome.failure else None,
               **({"error": error_text(outcome.failure, outcome.message)}
                  if outcome.failure is not None else {}),
               **({"usage": dict(usage)} if usage else {})}, hold=True,
              at=at)
    return outcome


def status_for(failure: FailureClass) -> AttemptStatus:
    """The attempt status a failure class is recorded as."""
    return {
        FailureClass.TIMEOUT: AttemptStatus.TIMEOUT,
        FailureClass.BUDGET_EXCEEDED: AttemptStatus.BUDGET_EXCEEDED,
        FailureClass.CRITERIA_FAILED: AttemptStatus.CRITERIA_FAILED,
    }.get(failure, AttemptStatus.FAILED)


def usage_record(result: AttemptResult) -> dict[str, Any]:
    """The attempt's usage as recorded: tool calls always, the rest when measured."""
    u = result.usage
    out: dict[str, Any] = {"tool_calls": u.tool_calls}
    measured = {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                "total_tokens": u.total_tokens, "cost_usd": u.cost_usd}
    out.update({k: v for k, v in measured.items() if v is not None})
    return out


def decision_label(here: NodeAt, node: Mapping[str, Any],
                   label: str | None) -> tuple[str | None, str | None]:
    """``(label, None)`` for a declared branch or the default (RT022 warns); otherwise
    ``(None, problem)``."""
    block = node.get("decision") or {}
    labels = [b["label"] for b in block.get("branches") or []]
    if label in labels:
        return label, None
    default = block.get("default_branch")
    if default:
        diagnostic(here.run, "RT022", "warning", f"node {here.nid}: label {label!r} is not one of "
                   f"{labels}; default branch {default!r} used", node=here.key)
        return str(default), None
    return None, f"label {label!r} is not one of {labels} and there is no default_branch"
