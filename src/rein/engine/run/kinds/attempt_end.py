"""An attempt's record and the node record that holds it, as typed values; how an attempt
ended, and what the next attempt is told about it.

A node's steps do not write dictionaries: each change makes a new :class:`NodeRecord` (an
attempt opened, served or ended, a human event, the node's end), which
:class:`rein.engine.run.runtime.NodeState` holds until the store writes it. The conversion
to the stored ``node_run`` object (:meth:`NodeRecord.to_record`, :meth:`AttemptRecord.
to_record`, :meth:`AttemptEnd.to_record`) and back (``from_record``) is explicit and is the
only place a field name is spelled, so a run continued by replay (another process, after a
pause) takes back what an earlier one wrote, and the next attempt's feedback comes from the
same value either way.

An attempt's record keeps the failure's message on its own (``x-rein-message``) beside the
``error`` text AGS defines (``"<failure class>: <message>"``): reading it back never splits
a text. A record written before the message was kept (no ``x-rein-message``) is still read:
the message is what ``error`` says after the class the record holds
(``x-rein-failure-class``).

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
from rein.formats.ags.spec import DEFAULT_RETRY_ON, NodeSpec, RetrySpec, SuccessSpec
from rein.workers.base import Feedback

__all__ = ["DEFAULT_RETRY_ON", "DURATION", "GENERIC", "MESSAGE", "RERUN", "STATE_FIELDS",
           "AttemptEnd", "AttemptOutcome", "AttemptRecord", "AttemptServed", "AttemptStart",
           "NodeRecord", "adopted", "backoff", "error_text", "failed_criteria", "feedback_for",
           "should_retry"]

GENERIC = "success criteria failed"  # when no failed criterion is known (none recorded)

RERUN = "x-rein-rerun"  # the attempt re-runs one an earlier process left in flight
MESSAGE = "x-rein-message"  # why an attempt failed, apart from its ``error`` text
DURATION = "x-rein-duration-seconds"


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
    message: str | None = None  # why it failed (``x-rein-message``; ``error`` after the class)
    success: Mapping[str, Any] | None = None  # the success outcome's record, when judged
    outputs: Mapping[str, Any] = field(default_factory=dict)  # kept when it failed

    def to_record(self) -> dict[str, Any]:
        """The closing fields, in the order the run record has them."""
        rec: dict[str, Any] = {"status": self.status.value, "finished_at": self.finished_at}
        if self.success is not None:
            rec["success"] = dict(self.success)
        if self.failure is not None:
            rec["error"] = error_text(self.failure, self.message)
            if self.message is not None:
                rec[MESSAGE] = self.message
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
        message = rec[MESSAGE] if MESSAGE in rec else _message(failure, rec.get("error"))
        return cls(attempt=int(rec["attempt"]), status=AttemptStatus(status),
                   finished_at=str(rec.get("finished_at") or ""), failure=failure,
                   message=None if failure is None or message is None else str(message),
                   success=rec.get("success"), outputs=dict(rec.get("x-rein-outputs") or {}))


def _message(failure: FailureClass | None, error: Any) -> str | None:
    """The message of a record written before it was kept apart: what :func:`error_text`
    wrote after the class; an ``error`` that does not start with the recorded class
    (written by hand, or by an older rein) is the message as a whole."""
    if failure is None or not error:
        return None
    text = str(error)
    if text == failure.value:
        return None
    prefix = f"{failure.value}: "
    return text.removeprefix(prefix) if text.startswith(prefix) else text


class AttemptRecord(Frozen):
    """One attempt's object of the run record (``node_run.attempts[]``): opened, then served
    by a worker (not an expression decision's), then ended.

    Read from a stored record, it writes that record back as it was read: fields it does not
    model (``x-rein-interrupted``, a newer rein's) and fields an older rein wrote otherwise
    (an ``error`` text by hand, no ``x-rein-message``) are kept in :attr:`as_read`."""

    start: AttemptStart
    served: AttemptServed | None = None
    end: AttemptEnd | None = None
    as_read: Mapping[str, Any] = field(default_factory=dict)  # stored fields, as they were
    unread: frozenset[str] = frozenset()  # fields this value writes that the stored one lacked

    @property
    def attempt(self) -> int:
        return self.start.attempt

    def to_record(self) -> dict[str, Any]:
        rec = self.start.to_record()
        if self.served is not None:
            rec.update(self.served.to_record())
        if self.end is not None:
            rec.update(self.end.to_record())
        if self.as_read or self.unread:
            for name in self.unread:
                rec.pop(name, None)
            rec.update(self.as_read)
        return rec

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> AttemptRecord:
        start = AttemptStart(attempt=int(rec["attempt"]), started_at=str(rec.get("started_at")
                             or ""), rerun=bool(rec.get(RERUN)))
        served = None
        if isinstance(rec.get("usage"), Mapping) and isinstance(rec.get("routed"), Mapping):
            served = AttemptServed(usage=rec["usage"], routed=rec["routed"])
        typed = cls(start=start, served=served, end=AttemptEnd.from_record(rec))
        written = typed.to_record()
        return typed.replace(
            as_read={k: v for k, v in rec.items() if k not in written or written[k] != v},
            unread=frozenset(k for k in written if k not in rec))


# The fields of a node's record that its state writes (NodeState.to_record): not part of
# the record value, which holds what the node's steps add.
STATE_FIELDS = frozenset({"node_id", "type", "status", "scope_path", "inputs", "outputs",
                          "x-rein-redacted", "decision", "x-rein-unabsorbed",
                          "x-rein-degraded"})


class NodeRecord(Frozen):
    """What a node's steps add to its ``node_run`` object: when it started and ended, its
    attempts, the human events it met, and the fields its end adds (``skip_reason``,
    ``escalated``, ``x-rein-blocked``, ``child_run_id``, ...: :attr:`notes`). The fields
    its state holds (status, inputs, outputs, decision) are the state's own."""

    started_at: str | None = None
    finished_at: str | None = None
    duration: float | None = None  # x-rein-duration-seconds
    attempts: tuple[AttemptRecord, ...] = ()
    human_events: tuple[Mapping[str, Any], ...] = ()
    notes: Mapping[str, Any] = field(default_factory=dict)

    def with_attempt(self, attempt: AttemptRecord) -> NodeRecord:
        """This record with ``attempt`` in the place of the one of its number (appended
        when there is none)."""
        n = attempt.start.attempt
        attempts = self.attempts
        for i, a in enumerate(attempts):
            if a.start.attempt == n:
                return self.replace(attempts=(*attempts[:i], attempt, *attempts[i + 1:]))
        return self.replace(attempts=(*attempts, attempt))

    def attempt(self, n: int) -> AttemptRecord | None:
        for a in self.attempts:
            if a.start.attempt == n:
                return a
        return None

    def with_human(self, event: Mapping[str, Any]) -> NodeRecord:
        return self.replace(human_events=(*self.human_events, dict(event)))

    def noting(self, fields: Mapping[str, Any]) -> NodeRecord:
        """This record with more fields of the node's end (the ones given win)."""
        return self.replace(notes={**self.notes, **fields}) if fields else self

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {}
        if self.started_at is not None:
            rec["started_at"] = self.started_at
        if self.attempts:
            rec["attempts"] = [a.to_record() for a in self.attempts]
        if self.human_events:
            rec["human_events"] = [dict(e) for e in self.human_events]
        if self.finished_at is not None:
            rec["finished_at"] = self.finished_at
        if self.duration is not None:
            rec[DURATION] = self.duration
        rec.update(self.notes)
        return rec

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> NodeRecord:
        """The record value of a stored ``node_run`` object (the fields the state writes
        left to the state)."""
        known = {"started_at", "finished_at", DURATION, "attempts", "human_events"}
        duration = rec.get(DURATION)
        return cls(
            started_at=rec.get("started_at"), finished_at=rec.get("finished_at"),
            duration=None if duration is None else float(duration),
            attempts=tuple(AttemptRecord.from_record(a) for a in rec.get("attempts") or ()),
            human_events=tuple(dict(e) for e in rec.get("human_events") or ()),
            notes={k: v for k, v in rec.items() if k not in known and k not in STATE_FIELDS})



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


def adopted(record: NodeRecord, spec: NodeSpec, n: int) -> AttemptOutcome | None:
    """Attempt ``n`` as an earlier process closed it, when the run paused after it.

    A run continues by replay, and a node that was retrying is scheduled again from its
    first attempt. An attempt that already ended in failure is taken from the record as it
    ended (its work was done, its criteria judged) instead of being run and judged again
    against a workspace that later attempts have changed.
    """
    found = record.attempt(n)
    end = None if found is None else found.end
    if end is not None and end.failure is not None:  # not in flight, nor succeeded
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
