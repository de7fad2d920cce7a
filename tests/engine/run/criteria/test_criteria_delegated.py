"""The criteria that ask someone else: llm_judge, human and external checkers."""

from __future__ import annotations

import asyncio
import sys
import textwrap

import pytest
from criteria_helpers import check, success

from rein.engine.run.criteria import (
    CheckRequest,
    CheckResult,
    HumanAnswer,
    HumanRequest,
    JudgeRequest,
    JudgeVerdict,
)


class ScriptedJudge:
    """A test double judge: answers the scores it was given, in order, and records requests."""

    def __init__(self, *scores: float, instance: str | None = "judge-model") -> None:
        self.scores = list(scores)
        self.instance = instance
        self.requests: list[JudgeRequest] = []

    async def __call__(self, request: JudgeRequest) -> JudgeVerdict:
        self.requests.append(request)
        score = self.scores[len(self.requests) - 1]
        return JudgeVerdict(score=score, reasoning=f"reason {len(self.requests)}", instance=self.instance)


JUDGE = {
    "id": "readable",
    "kind": "llm_judge",
    "rubric": "Is the quickstart for ${{ self.outputs.name }} followable?",
    "inputs": ["self.outputs.doc"],
}


def test_judge_passes_at_threshold_and_records_score_and_reasoning(ctx_for):
    judge = ScriptedJudge(0.8)
    result = check(JUDGE, ctx_for({"name": "rein", "doc": "# Quickstart"}, judge=judge))
    assert result.passed
    assert result.score == 0.8
    assert result.evidence == "reason 1"
    (request,) = judge.requests
    assert request.rubric == "Is the quickstart for rein followable?"
    assert request.inputs == ("# Quickstart",)
    assert (request.sample, request.samples, request.node_id, request.attempt) == (1, 1, "build", 1)
    assert result.to_record()["score"] == 0.8


def test_judge_fails_below_threshold(ctx_for):
    result = check({**JUDGE, "threshold": 0.9}, ctx_for({"name": "x", "doc": ""}, judge=ScriptedJudge(0.85)))
    assert not result.passed
    assert result.error is None
    assert result.score == 0.85


def test_judge_uses_the_median_of_samples(ctx_for):
    judge = ScriptedJudge(0.9, 0.2, 0.85)
    result = check({**JUDGE, "samples": 3}, ctx_for({"name": "x", "doc": ""}, judge=judge))
    assert result.passed
    assert result.score == 0.85
    assert [r.sample for r in judge.requests] == [1, 2, 3]
    assert result.extra["x-rein-scores"] == [0.9, 0.2, 0.85]
    assert result.evidence.startswith("[judgement 1 of 3, score 0.9] reason 1")


def test_judge_median_can_fail_where_a_single_sample_would_pass(ctx_for):
    judge = ScriptedJudge(0.95, 0.3, 0.4)
    result = check({**JUDGE, "samples": 3}, ctx_for({"name": "x", "doc": ""}, judge=judge))
    assert not result.passed
    assert result.score == 0.4


def test_same_instance_judging_is_recorded(ctx_for):
    outputs = {"name": "x", "doc": ""}
    same = check(JUDGE, ctx_for(outputs, judge=ScriptedJudge(1.0, instance="m1"), producer_instance="m1"))
    assert same.to_record()["x-rein-same-instance"] is True
    other = check(JUDGE, ctx_for(outputs, judge=ScriptedJudge(1.0, instance="m2"), producer_instance="m1"))
    assert "x-rein-same-instance" not in other.to_record()
    assert other.to_record()["x-rein-judge-instance"] == "m2"
    unknown = check(JUDGE, ctx_for(outputs, judge=ScriptedJudge(1.0, instance=None), producer_instance="m1"))
    assert unknown.to_record()["x-rein-same-instance"] == "unknown"


def test_no_judge_is_an_error_not_a_skip(ctx_for):
    result = check(JUDGE, ctx_for({"name": "x", "doc": ""}))
    assert not result.passed
    assert result.error_code == "RT011"  # AGS: the judge's tier cannot be served


@pytest.mark.parametrize("score", [1.5, -0.1, float("nan"), True])
def test_out_of_range_score_is_an_error(ctx_for, score):
    result = check(JUDGE, ctx_for({"name": "x", "doc": ""}, judge=ScriptedJudge(score)))
    assert not result.passed
    assert "expected 0 to 1" in result.error


def test_judge_errors_propagate(ctx_for):
    class Unavailable(Exception):
        pass

    async def broken(request: JudgeRequest) -> JudgeVerdict:
        raise Unavailable("provider down")

    with pytest.raises(Unavailable):
        check(JUDGE, ctx_for({"name": "x", "doc": ""}, judge=broken))


def test_judge_timeout_fails_with_class_timeout(ctx_for):
    async def stuck(request: JudgeRequest) -> JudgeVerdict:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    result = check({**JUDGE, "timeout_seconds": 0.05}, ctx_for({"name": "x", "doc": ""}, judge=stuck))
    assert not result.passed
    assert result.failure_class == "timeout"


class Reviewer:
    """A test double approval queue: answers as told and keeps the requests."""

    def __init__(self, answer: HumanAnswer) -> None:
        self.answer = answer
        self.requests: list[HumanRequest] = []

    async def __call__(self, request: HumanRequest) -> HumanAnswer:
        self.requests.append(request)
        return self.answer


HUMAN = {
    "id": "signoff",
    "kind": "human",
    "prompt": "Does ${{ self.outputs.name }} read well?",
    "roles": ["docs-owner"],
}


def test_human_approval_passes_with_the_note_as_evidence(ctx_for):
    reviewer = Reviewer(HumanAnswer(approved=True, note="Reads well.", reviewer="ana"))
    result = check(HUMAN, ctx_for({"name": "the guide"}, ask_human=reviewer))
    assert result.passed
    assert result.evidence == "Reads well."
    (request,) = reviewer.requests
    assert request.prompt == "Does the guide read well?"
    assert request.roles == ("docs-owner",)
    assert request.digest.startswith("sha256-")
    assert result.to_record()["x-rein-reviewer"] == "ana"


def test_human_decline_fails(ctx_for):
    result = check(HUMAN, ctx_for({"name": "x"}, ask_human=Reviewer(HumanAnswer(approved=False))))
    assert not result.passed
    assert result.evidence == "the reviewer declined without a note"


def test_human_digest_binds_the_outputs(ctx_for):
    first, second = Reviewer(HumanAnswer(approved=True)), Reviewer(HumanAnswer(approved=True))
    check(HUMAN, ctx_for({"name": "x", "doc": "v1"}, ask_human=first))
    check(HUMAN, ctx_for({"name": "x", "doc": "v2"}, ask_human=second))
    check(HUMAN, ctx_for({"name": "x", "doc": "v1"}, ask_human=second))
    assert first.requests[0].digest != second.requests[0].digest
    assert first.requests[0].digest == second.requests[1].digest


def test_the_engines_pause_signal_passes_through(ctx_for):
    class Paused(BaseException):
        """Stands in for the engine's pause signal."""

    async def pause(request: HumanRequest) -> HumanAnswer:
        raise Paused()

    block = {"criteria": [{**HUMAN, "description": "sign-off"}]}
    with pytest.raises(Paused):
        success(block, ctx_for({"name": "x"}, ask_human=pause))


def test_no_approval_queue_is_an_error(ctx_for):
    result = check(HUMAN, ctx_for({"name": "x"}))
    assert not result.passed
    assert result.error_code == "RT015"  # AGS: a human interaction cannot be presented


def test_external_sync_and_async_checkers(ctx_for):
    seen: list[CheckRequest] = []

    def license_ok(request: CheckRequest) -> bool:
        seen.append(request)
        return request.params["spdx"] == "MIT"

    async def coverage(request: CheckRequest) -> CheckResult:
        return CheckResult(passed=False, evidence={"coverage": 71}, score=0.71)

    ctx = ctx_for({"x": 1}, checkers={"license_ok": license_ok, "coverage": coverage})
    passed = check({"id": "l", "kind": "external", "check": "license_ok", "params": {"spdx": "MIT"}}, ctx)
    assert passed.passed and passed.evidence == "checker 'license_ok' returned True"
    assert seen[0].outputs == {"x": 1} and seen[0].workspace == ctx.workspace
    failed = check({"id": "c", "kind": "external", "check": "coverage"}, ctx)
    assert not failed.passed
    assert failed.evidence == {"coverage": 71} and failed.score == 0.71


def test_unknown_checker_fails_and_names_the_known_ones(ctx_for):
    ctx = ctx_for(checkers={"b": lambda r: True, "a": lambda r: True})
    result = check({"id": "x", "kind": "external", "check": "nope"}, ctx)
    assert not result.passed
    assert result.error_code == "CRIT004"
    assert result.error.startswith("unknown checker 'nope' (registered: a, b)")


def test_a_raising_checker_fails_the_criterion(ctx_for):
    def broken(request: CheckRequest) -> bool:
        raise KeyError("threshold")

    result = check({"id": "x", "kind": "external", "check": "broken"}, ctx_for(checkers={"broken": broken}))
    assert not result.passed
    assert result.error == "checker 'broken' failed: KeyError: 'threshold'"


def test_a_checker_returning_nonsense_is_an_error(ctx_for):
    result = check({"id": "x", "kind": "external", "check": "odd"}, ctx_for(checkers={"odd": lambda r: "yes"}))
    assert result.error_code == "CRIT005"


def test_checkers_are_discovered_from_entry_points(ctx_for, tmp_path, monkeypatch):
    site = tmp_path / "site"
    dist = site / "rein_test_checks-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rein-test-checks\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[rein.checkers]\nalways_pass = rein_test_checks:always\nbroken_ref = rein_test_checks:missing\n"
    )
    (site / "rein_test_checks.py").write_text(
        textwrap.dedent(
            """
            from rein.engine.run.criteria import CheckResult

            def always(request):
                return CheckResult(passed=True, evidence="checked " + request.name)
            """
        )
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "rein_test_checks", raising=False)
    ctx = ctx_for()
    found = check({"id": "x", "kind": "external", "check": "always_pass"}, ctx)
    assert found.passed and found.evidence == "checked always_pass"
    unknown = check({"id": "x", "kind": "external", "check": "not_registered"}, ctx)
    assert not unknown.passed and unknown.error_code == "CRIT004"
    assert "always_pass" in unknown.error
    broken = check({"id": "x", "kind": "external", "check": "broken_ref"}, ctx)
    assert not broken.passed and broken.error_code == "CRIT005"
