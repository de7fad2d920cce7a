"""How one attempt ended, as a typed value and as the fields of its record, and what the
next attempt is told about it.

An attempt object of the run record (``node_run.attempts[]``) gets its closing fields when
the attempt ends: ``status``, ``finished_at``, the ``success`` outcome, and for a failure
``error`` (``"<failure class>: <message>"``), ``x-rein-failure-class`` and the outputs it
produced (``x-rein-outputs``, redacted ones left out). :class:`AttemptEnd` is those fields
typed: :meth:`AttemptEnd.to_record` writes them and :meth:`AttemptEnd.from_record` reads them
back, so a run continued by replay (another process, after a pause) takes an ended attempt
as it ended, and the next attempt's feedback comes from the same value either way.

The record keeps the failure's message only inside ``error``, after the failure class the
record also holds on its own (``x-rein-failure-class``): :meth:`from_record` takes the class
from that field and the message as what ``error`` says after it, the one inverse of
:meth:`to_record`, instead of splitting the text at its first colon.

Between attempts: the wait, the feedback the next attempt gets, and adopted attempts.
Retries carry the failed criteria's descriptions and evidence as feedback (``failure.retry.
feedback``). A run continued by replay schedules a retrying node again from its first
attempt; attempts that already ended in failure are adopted from the record instead of run
and judged again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.frozen import Frozen, field
from rein.core.states import AttemptStatus
from rein.engine.run.criteria.model import SuccessOutcome
from rein.engine.run.runtime import NodeState
from rein.formats.ags.spec import DEFAULT_RETRY_ON, NodeSpec, RetrySpec, SuccessSpec
from rein.workers.base import Feedback

__all__ = ["DEFAULT_RETRY_ON", "GENERIC", "RERUN", "AttemptEnd", "AttemptOutcome", "AttemptServed",
           "AttemptStart", "adopted", "backoff",
           "error_text", "failed_criteria", "feedback_for", "should_retry"]

GENERIC = "success criteria failed"  # when no failed criterion is known (none recorded)
RERUN = "x-rein-rerun"  # the attempt re-runs one an earlier process left in flight


def error_text(failure: FailureClass, message: str | None) -> str:
    """The record's ``error`` of a failed attempt: its class, then its message."""
    return f"{failure.value}: {message or ''}".rstrip(": ")


class AttemptStart(Frozen):
    """The opening fields of one attempt's record, written when it is put on record as in
    flight: its number, when it started, and whether it re-runs an attempt an earlier
    process left in flight (``x-rein-rerun``)."""

    attempt: int
    started_at: str
    rerun: bool = False

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {"attempt": self.attempt, "started_at": self.started_at}
        if self.rerun:
            rec[RERUN] = True
        return rec


class AttemptServed(Frozen):
    """Where a worker served an attempt and what it spent: the fields its record gets when
    the worker's result comes back (``usage``, ``routed``, and the worker's own ``x-``
    fields such as ``x-rein-profile``)."""

    usage: Mapping[str, Any]
    routed: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {"usage": dict(self.usage), "routed": dict(self.routed)}
        rec.update({k: v for k, v in self.extra.items() if str(k).startswith("x-")})
        return rec


class AttemptEnd(Frozen):
    """The closing fields of one attempt's record."""

    attempt: int
    status: AttemptStatus
    finished_at: str
    failure: FailureClass | None = None
    message: str | None = None  # why it failed, as the record's ``error`` says after the class
    success: Mapping[str, Any] | None = None  # the success outcome's record, when judged
    outputs: Mapping[str, Any] = field(default_factory=dict)  # kept when it failed

    def to_record(self) -> dict[str, Any]:
        """The fields, in the order the run record has them (written into the attempt's
        object with ``dict.update``, which keeps a field already there in its place)."""
        rec: dict[str, Any] = {"status": self.status.value, "finished_at": self.finished_at}
        if self.success is not None:
            rec["success"] = dict(self.success)
        if self.failure is not None:
            rec["error"] = error_text(self.failure, self.message)
            rec["x-rein-failure-class"] = self.failure.value
            if self.outputs:
                rec["x-rein-outputs"] = dict(self.outputs)
        return rec

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> AttemptEnd | None:
        """The end an attempt's record holds; ``None`` while it is in flight. A failure the
        record does not classify is a failed criterion (records written before the class
        was recorded)."""
        status = rec.get("status")
        if status is None:
            return None
        failure = None
        if status != AttemptStatus.SUCCEEDED.value:
            failure = FailureClass(rec.get("x-rein-failure-class") or "criteria_failed")
        return cls(attempt=int(rec["attempt"]), status=AttemptStatus(status),
                   finished_at=str(rec.get("finished_at") or ""), failure=failure,
                   message=_message(failure, rec.get("error")),
                   success=rec.get("success"), outputs=dict(rec.get("x-rein-outputs") or {}))


def _message(failure: FailureClass | None, error: Any) -> str | None:
    """What :func:`error_text` wrote after the class; an ``error`` that does not start with
    the recorded class (written by hand, or by an older rein) is the message as a whole."""
    if failure is None or not error:
        return None
    text = str(error)
    if text == failure.value:
        return None
    prefix = f"{failure.value}: "
    return text.removeprefix(prefix) if text.startswith(prefix) else text


class AttemptOutcome(Frozen):
    """How one attempt ended."""

    status: AttemptStatus
    failure: FailureClass | None = None
    outputs: Mapping[str, Any] = field(default_factory=dict)
    success: SuccessOutcome | None = None
    decision: str | None = None
    message: str | None = None
    feedback: tuple[Mapping[str, Any], ...] = ()  # failed criteria, as the next try hears


def failed_criteria(results: Iterable[Mapping[str, Any]], success: SuccessSpec
                    ) -> tuple[dict[str, Any], ...]:
    """The failed criteria of an attempt as the next attempt is told them: required ones
    first, each with its declared description and its *recorded* evidence.

    The one builder of that shape. It reads the run record's ``criterion_result`` objects, so
    an attempt that ran in this process and one adopted from the store after a pause give
    the next attempt the same words, and evidence a criterion does not record
    (``record_evidence: false``) never reaches a prompt, which is recorded too.
    """
    described = success.described()
    failed = [r for r in results if not r.get("passed")]
    failed.sort(key=lambda r: r.get("severity") == "advisory")
    return tuple(
        {"id": r.get("id"), "kind": r.get("kind"), "severity": r.get("severity"),
         "description": described.get(str(r.get("id")), ""),
         "evidence": r.get("evidence"), **({"error": r["error"]} if r.get("error") else {})}
        for r in failed)


def should_retry(retry: RetrySpec, last: AttemptOutcome, n: int) -> bool:
    """Whether attempt ``n``'s failure earns attempt ``n + 1`` under ``failure.retry``."""
    return retry.retries(last.failure, n)


def feedback_for(retry: RetrySpec, last: AttemptOutcome) -> Feedback | None:
    """What the next attempt is told about ``last`` (``failure.retry.feedback``), whether
    ``last`` ran in this process or was adopted from the record."""
    if retry.feedback == "none":
        return None
    failure = last.failure or FailureClass.CRITERIA_FAILED
    summary = last.message or failure.value
    if retry.feedback == "failure_summary" or not last.feedback:
        return Feedback(failure_class=failure, summary=summary)
    # Each failed criterion follows with its description and evidence: the heading does
    # not say the first of them again.
    return Feedback(failure_class=failure, summary=GENERIC, failed_criteria=last.feedback)


def adopted(state: NodeState, spec: NodeSpec, n: int) -> AttemptOutcome | None:
    """Attempt ``n`` as an earlier process closed it, when the run paused after it.

    A run continues by replay, and a node that was retrying is scheduled again from its
    first attempt. An attempt that already ended in failure is taken from the record as it
    ended (its work was done, its criteria judged) instead of being run and judged again
    against a workspace that later attempts have changed.
    """
    for rec in state.record.get("attempts") or []:
        if rec.get("attempt") != n:
            continue
        end = AttemptEnd.from_record(rec)
        if end is None or end.failure is None:  # in flight, or it succeeded: run it
            continue
        return AttemptOutcome(
            status=end.status, failure=end.failure, message=end.message, outputs=end.outputs,
            feedback=failed_criteria((end.success or {}).get("results") or (), spec.success))
    return None


def backoff(retry: RetrySpec, n: int, seed: str) -> float:
    """Delay before attempt ``n`` ≥ 2 (AGS leaves the formula open; see docs/ambiguities.md)."""
    initial = retry.initial_delay_seconds
    match retry.backoff:
        case "none":
            delay = 0.0
        case "fixed":
            delay = initial
        case "linear":
            delay = initial * (n - 1)
        case _:
            delay = initial * 2 ** (n - 2)
    delay = min(delay, retry.max_delay_seconds)
    if retry.jitter and delay > 0:
        import random  # on a retry with jitter only: every submit imports this module

        delay = random.Random(seed).uniform(0, delay)  # seeded: the same run waits the same
    return delay
