"""Evaluating a success block (AGS §10.1): run the criteria, combine the required ones.

``mode`` combines **required** criteria only. Advisory criteria, and criteria the failure
ladder relaxed, are evaluated and recorded but never decide the outcome. A block with no
required criterion left is read as: ``all`` passes (nothing required failed), ``any`` and
``n_of`` fail (nothing required passed) — the reading recommended by the AGS digest.

``evaluation_order: cheapest_first`` evaluates deterministic cheap kinds before commands,
judges and people, and stops once the outcome is decided: under ``all`` at the first
required failure, under ``any`` at the first required pass, under ``n_of`` when the count
is reached or can no longer be reached. It never changes the outcome. ``declared`` order
evaluates everything, so the next attempt hears about every failure.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping, Sequence
from datetime import datetime
from typing import Any

from rein.engine.run.criteria import files, matching
from rein.engine.run.criteria.base import CriterionProblem, Verdict
from rein.engine.run.criteria.evidence import clean, clean_value
from rein.engine.run.criteria.model import (
    CriterionContext,
    CriterionResult,
    Severity,
    SuccessOutcome,
)

Check = Callable[[Mapping[str, Any], CriterionContext], Awaitable[Verdict]]

# The kinds that run a process, ask a model or a person, or call a checker: their module is
# imported when a criterion of theirs is first evaluated, so that a turn whose node has none
# of them does without (``tests/cli/test_import_budgets.py``).
_LATER_CHECKS = {"command": "rein.engine.run.criteria.command",
                 "llm_judge": "rein.engine.run.criteria.judge",
                 "human": "rein.engine.run.criteria.human",
                 "external": "rein.engine.run.criteria.external"}


class _Checks(MutableMapping[str, Check]):
    """Criterion kind → its check (each module's ``check``), imported on first use for the
    kinds of ``_LATER_CHECKS``."""

    def __init__(self, **now: Check) -> None:
        self._now = now

    def __getitem__(self, kind: str) -> Check:
        if kind not in self._now and kind in _LATER_CHECKS:
            self._now[kind] = importlib.import_module(_LATER_CHECKS[kind]).check
        return self._now[kind]

    def __setitem__(self, kind: str, value: Check) -> None:  # a stand-in, in tests
        self._now[kind] = value

    def __delitem__(self, kind: str) -> None:
        del self._now[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._now, *_LATER_CHECKS]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*self._now, *_LATER_CHECKS]))


CHECKS: MutableMapping[str, Check] = _Checks(
    file_exists=files.check_file_exists, artifact_present=files.check_artifact_present,
    json_schema=matching.check_json_schema, regex=matching.check_regex,
    expression=matching.check_expression)

# Cost rank for cheapest_first: in-memory checks, then the file system, then processes,
# then model calls, then people. Ties keep declared order.
COST: Mapping[str, int] = {
    "artifact_present": 0,
    "expression": 1,
    "regex": 1,
    "json_schema": 2,
    "file_exists": 3,
    "external": 4,
    "command": 5,
    "llm_judge": 6,
    "human": 7,
}


async def evaluate_success(
    block: Mapping[str, Any] | None,
    ctx: CriterionContext,
    *,
    relaxed: frozenset[str] = frozenset(),
) -> SuccessOutcome:
    """Evaluate a node's ``success`` block for one attempt.

    ``None`` (no block) passes: the caller has already checked the outputs. ``relaxed``
    names criteria the failure ladder relaxed (``relax_criteria``): they count as advisory.
    """
    if block is None:
        return SuccessOutcome(passed=True)
    criteria: Sequence[Mapping[str, Any]] = block.get("criteria") or ()
    mode = block.get("mode", "all")
    count = int(block.get("count", 1))
    required = [_is_required(c, relaxed) for c in criteria]

    order = list(range(len(criteria)))
    if block.get("evaluation_order") == "cheapest_first":
        order.sort(key=lambda i: COST.get(str(criteria[i].get("kind")), len(COST)))

    results: dict[int, CriterionResult] = {}
    for position, index in enumerate(order):
        results[index] = await evaluate_criterion(criteria[index], ctx, relaxed=relaxed)
        if block.get("evaluation_order") == "cheapest_first":
            remaining = [i for i in order[position + 1 :] if required[i]]
            if _decided(mode, count, required, results, remaining):
                break

    in_order = tuple(results[i] for i in sorted(results))
    counted = [results[i] for i in sorted(results) if required[i]]
    passes = sum(1 for r in counted if r.passed)
    n_required = sum(required)
    if mode == "any":
        passed = passes >= 1
    elif mode == "n_of":
        passed = passes >= count
    else:
        passed = passes == n_required and len(counted) == n_required
    return SuccessOutcome(
        passed=passed,
        mode=mode if mode in ("all", "any", "n_of") else "all",
        results=in_order,
        failed_required=tuple(r for r in counted if not r.passed),
        short_circuited=tuple(
            str(criteria[i].get("id")) for i in range(len(criteria)) if i not in results
        ),
    )


def _is_required(criterion: Mapping[str, Any], relaxed: frozenset[str]) -> bool:
    return criterion.get("severity", "required") == "required" and criterion.get("id") not in relaxed


def _decided(
    mode: str,
    count: int,
    required: list[bool],
    results: Mapping[int, CriterionResult],
    remaining: list[int],
) -> bool:
    """Whether the outcome can no longer change, whatever the remaining criteria say."""
    done = [r for i, r in results.items() if required[i]]
    passes = sum(1 for r in done if r.passed)
    fails = len(done) - passes
    if mode == "any":
        return passes >= 1
    if mode == "n_of":
        return passes >= count or passes + len(remaining) < count
    return fails >= 1


async def evaluate_criterion(
    criterion: Mapping[str, Any],
    ctx: CriterionContext,
    *,
    relaxed: frozenset[str] = frozenset(),
) -> CriterionResult:
    """Evaluate one criterion: dispatch on ``kind``, then time, redact and truncate."""
    cid = str(criterion.get("id", ""))
    kind = str(criterion.get("kind", ""))
    declared = criterion.get("severity", "required")
    is_relaxed = declared == "required" and cid in relaxed
    severity: Severity = "required" if declared == "required" and not is_relaxed else "advisory"
    started_at = ctx.clock() if ctx.clock else None
    started = time.monotonic()

    check = CHECKS.get(kind)
    if check is None:
        verdict = Verdict(
            passed=False,
            error=f"unknown criterion kind {kind!r}; expected one of {', '.join(CHECKS)}",
            error_code="CRIT001",
        )
    else:
        try:
            verdict = await check(criterion, ctx)
        except CriterionProblem as problem:
            verdict = Verdict(passed=False, error=problem.text(), error_code=problem.code)

    duration = _duration(started_at, ctx.clock() if ctx.clock else None, started)
    evidence, cut = clean_value(verdict.evidence, ctx.secret_values)
    error = clean(verdict.error, ctx.secret_values)[0] if verdict.error else None
    extra = dict(verdict.extra)
    if is_relaxed:
        extra["x-rein-relaxed"] = True
    return CriterionResult(
        id=cid,
        kind=kind,
        severity=severity,
        passed=verdict.passed and verdict.error is None,
        description=str(criterion.get("description", "")),
        evidence=evidence,
        evidence_truncated=verdict.evidence_truncated or cut,
        score=verdict.score,
        error=error,
        error_code=verdict.error_code,
        failure_class=verdict.failure_class,
        duration_seconds=duration,
        evaluated_at=_iso(started_at),
        record_evidence=bool(criterion.get("record_evidence", True)),
        extra=extra,
    )


def _duration(start: datetime | None, end: datetime | None, monotonic_start: float) -> float:
    if start is not None and end is not None:
        return max(0.0, (end - start).total_seconds())
    return max(0.0, time.monotonic() - monotonic_start)


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:  # a naive clock is read as UTC: RFC 3339 needs an offset
        return moment.isoformat() + "Z"
    return moment.isoformat().replace("+00:00", "Z")
