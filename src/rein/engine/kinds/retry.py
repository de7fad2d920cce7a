"""Between attempts: the wait, the feedback the next attempt gets, and adopted attempts.

Retries carry the failed criteria's descriptions and evidence as feedback (``failure.retry.
feedback``). A run continued by replay schedules a retrying node again from its first
attempt; attempts that already ended in failure are adopted from the record instead of run
and judged again.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.states import AttemptStatus
from rein.engine.kinds.attempt import AttemptOutcome
from rein.workers.base import Feedback

DEFAULT_RETRY_ON = ("transient", "tool_error", "criteria_failed")


def should_retry(retry: Mapping[str, Any], last: AttemptOutcome, n: int) -> bool:
    """Whether attempt ``n``'s failure earns attempt ``n + 1`` under ``failure.retry``."""
    retry_on = set(retry.get("retry_on", DEFAULT_RETRY_ON))
    return n < int(retry.get("max_attempts", 1)) and (
        "any" in retry_on or (last.failure or "") in retry_on)


def feedback_for(retry: Mapping[str, Any], last: AttemptOutcome) -> Feedback | None:
    """What the next attempt is told about ``last`` (``failure.retry.feedback``)."""
    mode = retry.get("feedback", "failed_criteria")
    if mode == "none":
        return None
    failure = last.failure or FailureClass.CRITERIA_FAILED
    summary = last.message or failure.value
    if mode == "failure_summary" or (last.success is None and not last.feedback):
        return Feedback(failure_class=failure, summary=summary)
    failed = last.feedback if last.success is None else tuple(last.success.feedback())
    return Feedback(failure_class=failure, summary=summary, failed_criteria=failed)


def adopted(state: Any, node: Mapping[str, Any], n: int) -> AttemptOutcome | None:
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
        return AttemptOutcome(
            status=AttemptStatus(rec["status"]),
            failure=FailureClass(rec.get("x-rein-failure-class") or "criteria_failed"),
            message=error.split(": ", 1)[1] if ": " in error else (error or None),
            outputs=dict(rec.get("x-rein-outputs") or {}),
            feedback=_recorded_feedback(rec, node))
    return None


def _recorded_feedback(rec: Mapping[str, Any], node: Mapping[str, Any]
                       ) -> tuple[dict[str, Any], ...]:
    """The failed criteria of a recorded attempt, required ones first, with descriptions."""
    criteria = {c.get("id"): c for c in (node.get("success") or {}).get("criteria") or []
                if isinstance(c, Mapping)}
    failed = [r for r in (rec.get("success") or {}).get("results") or [] if not r.get("passed")]
    failed.sort(key=lambda r: r.get("severity") == "advisory")
    return tuple(
        {"id": r.get("id"), "kind": r.get("kind"), "severity": r.get("severity"),
         "description": (criteria.get(r.get("id")) or {}).get("description", ""),
         "evidence": r.get("evidence"), **({"error": r["error"]} if r.get("error") else {})}
        for r in failed)


def backoff(retry: Mapping[str, Any], n: int, seed: str) -> float:
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
