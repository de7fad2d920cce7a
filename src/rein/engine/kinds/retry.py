"""Between attempts: the wait, the feedback the next attempt gets, and adopted attempts.

Retries carry the failed criteria's descriptions and evidence as feedback (``failure.retry.
feedback``). A run continued by replay schedules a retrying node again from its first
attempt; attempts that already ended in failure are adopted from the record instead of run
and judged again.
"""

from __future__ import annotations

import random

from rein.core.failures import FailureClass
from rein.engine.kinds.attempt import GENERIC, AttemptOutcome, failed_criteria
from rein.engine.kinds.attempt_end import AttemptEnd
from rein.engine.runtime import NodeState
from rein.formats.ags.spec import DEFAULT_RETRY_ON, NodeSpec, RetrySpec
from rein.workers.base import Feedback

__all__ = ["DEFAULT_RETRY_ON", "adopted", "backoff", "failed_criteria", "feedback_for",
           "should_retry"]

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
        delay = random.Random(seed).uniform(0, delay)  # seeded: the same run waits the same
    return delay
