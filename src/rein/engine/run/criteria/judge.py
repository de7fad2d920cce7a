"""The ``llm_judge`` criterion: a model scores the work against a rubric (AGS §10.2, §10.4).

The rubric is a template rendered in the attempt's scope; ``inputs`` are expressions whose
values are put in front of the judge. ``samples`` independent judgements are asked one
after the other (so a pause raised by the worker layer reaches the engine as itself, not
wrapped in an exception group); the **median** score is compared with ``threshold``
(default 0.8). Evidence is each judgement's reasoning; the median is recorded as ``score``.

AGS forbids using the producing model instance as its own judge unless the run record says
so. The judge's instance and the producer's are compared: ``x-rein-same-instance`` is
``true`` when they are the same, ``"unknown"`` when either is not known (it may be the same),
and absent when they are known to differ.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rein.core.loops import within
from rein.engine.run.criteria.base import (
    CriterionProblem,
    Verdict,
    evaluate_expression,
    render_template,
)
from rein.engine.run.criteria.model import CriterionContext, JudgeRequest, JudgeVerdict

DEFAULT_THRESHOLD = 0.8


async def check(criterion: Mapping[str, Any], ctx: CriterionContext) -> Verdict:
    """Ask ``samples`` judgements and compare their median with ``threshold``."""
    if ctx.judge is None:
        raise CriterionProblem(
            "no judge is available for llm_judge criteria",
            code="RT011",  # the judge's tier cannot be served (AGS §11.4, §18.2)
            hint="configure a model worker for judging, or make the criterion advisory",
        )
    rubric = render_template(str(criterion.get("rubric", "")), ctx, where="rubric")
    inputs = tuple(
        evaluate_expression(str(expr), ctx, where=f"inputs[{i}]")
        for i, expr in enumerate(criterion.get("inputs") or ())
    )
    threshold = float(criterion.get("threshold", DEFAULT_THRESHOLD))
    samples = int(criterion.get("samples", 1))
    if samples < 1:
        raise CriterionProblem(f"samples must be at least 1, got {samples}")
    timeout = criterion.get("timeout_seconds")

    verdicts: list[JudgeVerdict] = []
    for sample in range(1, samples + 1):
        request = JudgeRequest(
            node_id=ctx.node_id,
            criterion_id=str(criterion.get("id", "")),
            attempt=ctx.attempt,
            rubric=rubric,
            inputs=inputs,
            description=str(criterion.get("description", "")),
            sample=sample,
            samples=samples,
            judge_intelligence=criterion.get("judge_intelligence"),
            producer_instance=ctx.producer_instance,
        )
        try:
            verdict = await within(ctx.judge(request), timeout)
        except TimeoutError:
            return Verdict(
                passed=False,
                evidence=_reasoning(verdicts),
                error=f"judgement {sample} of {samples} took longer than {timeout} seconds",
                error_code="CRIT006",
                failure_class="timeout",
            )
        verdicts.append(_checked(verdict, sample))

    import statistics  # only a judged criterion needs it

    score = float(statistics.median(v.score for v in verdicts))
    extra = _instance_fields(ctx.producer_instance, verdicts)
    if samples > 1:
        extra["x-rein-scores"] = [v.score for v in verdicts]
    return Verdict(
        passed=score >= threshold,
        evidence=_reasoning(verdicts),
        score=score,
        extra=extra,
    )


def _checked(verdict: JudgeVerdict, sample: int) -> JudgeVerdict:
    # A judge is code outside rein: its verdict is checked at run time whatever it claims.
    score = getattr(verdict, "score", None)
    if (
        not isinstance(score, (int, float))
        or isinstance(score, bool)
        or not math.isfinite(score)
        or not 0.0 <= score <= 1.0
    ):
        raise CriterionProblem(f"judgement {sample} gave score {score!r}; expected 0 to 1")
    return verdict


def _reasoning(verdicts: list[JudgeVerdict]) -> str:
    if len(verdicts) == 1:
        return verdicts[0].reasoning
    return "\n\n".join(
        f"[judgement {i} of {len(verdicts)}, score {v.score:g}] {v.reasoning}"
        for i, v in enumerate(verdicts, 1)
    )


def _instance_fields(producer: str | None, verdicts: list[JudgeVerdict]) -> dict[str, Any]:
    instances = [v.instance for v in verdicts]
    extra: dict[str, Any] = {}
    known = sorted({i for i in instances if i is not None})
    if known:
        extra["x-rein-judge-instance"] = known[0] if len(known) == 1 else known
    if producer is not None and producer in known:
        extra["x-rein-same-instance"] = True
    elif producer is None or None in instances:
        extra["x-rein-same-instance"] = "unknown"
    return extra
