"""How one attempt ended, and what the next attempt is told about it.

The typed values of an attempt's record (:class:`AttemptStart`, :class:`AttemptServed`,
:class:`AttemptEnd`) live in :mod:`rein.engine.run.node_record`, with their conversion to and
from the record; they are importable from here too. A run continued by replay (another
process, after a pause) takes an ended attempt back from its record as it ended, so the next
attempt's feedback comes from the same value either way.

Between attempts: the wait, the feedback the next attempt gets, and adopted attempts.
Retries carry the failed criteria's descriptions and evidence as feedback (``failure.retry.
feedback``). A run continued by replay schedules a retrying node again from its first
attempt; attempts that already ended in failure are adopted from the record instead of run
and judged again.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.frozen import Frozen, field
from rein.core.states import AttemptStatus
from rein.engine.run.criteria.model import SuccessOutcome
from rein.engine.run.node_record import (
    RERUN,
    AttemptEnd,
    AttemptServed,
    AttemptStart,
    error_text,
)
from rein.engine.run.runtime import NodeState
from rein.formats.ags.spec import DEFAULT_RETRY_ON, NodeSpec, RetrySpec, SuccessSpec
from rein.workers.base import Feedback

__all__ = ["DEFAULT_RETRY_ON", "GENERIC", "RERUN", "AttemptEnd", "AttemptOutcome", "AttemptServed",
           "AttemptStart", "adopted", "backoff",
           "error_text", "failed_criteria", "feedback_for", "should_retry"]

GENERIC = "success criteria failed"  # when no failed criterion is known (none recorded)


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
    found = state.record.attempt(n)
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
        delay = random.Random(seed).uniform(0, delay)  # seeded: the same run waits the same
    return delay
