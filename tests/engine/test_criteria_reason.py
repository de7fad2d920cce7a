"""The one-line reason of a criteria failure: the first failed criterion with its
description and recorded evidence, the others by id, built from the typed results."""

from __future__ import annotations

from typing import Any

from rein.engine.run.criteria.model import CriterionResult, SuccessOutcome
from rein.engine.run.kinds.attempt import criteria_reason, evidence_line
from rein.engine.run.kinds.attempt_end import GENERIC
from rein.formats.ags.spec import SuccessSpec


def _failed(*results: CriterionResult) -> SuccessOutcome:
    return SuccessOutcome(passed=False, results=results, failed_required=results)


def _declared(**descriptions: str) -> SuccessSpec:
    return SuccessSpec.of({"criteria": [{"id": k, "kind": "command", "description": v}
                                        for k, v in descriptions.items()]})


def _result(cid: str, **fields: Any) -> CriterionResult:
    return CriterionResult(id=cid, kind="command", severity="required", passed=False, **fields)


def test_a_command_says_its_exit_code_and_the_last_line_it_printed() -> None:
    evidence = {"exit_code": 2, "expected_exit_code": 0,
                "stdout": "collected 48\n\n2 failed, 46 passed\n", "stderr": "x"}
    assert criteria_reason(_failed(_result("tests", evidence=evidence)),
                           _declared(tests="the tests pass")) == (
        "criterion tests failed (the tests pass): exit 2: 2 failed, 46 passed")


def test_a_timed_out_command_and_a_silent_one() -> None:
    assert evidence_line({"exit_code": -9, "timed_out": True, "stdout": "", "stderr": ""}) \
        == "timed out"
    assert evidence_line({"exit_code": 1, "stdout": "", "stderr": "boom\n"}) == "exit 1: boom"
    assert evidence_line({"exit_code": 0, "stdout_matched": False, "stdout": "ok"}) == (
        "exit 0, stdout did not match: ok")


def test_text_that_looks_like_json_is_quoted_as_text_not_parsed() -> None:
    said = '{"exit_code": 3, "stdout": "fine"}'  # what a judge wrote, not a command's result
    assert evidence_line(said) == said
    assert criteria_reason(_failed(_result("j", evidence=said)), _declared(j="")) == (
        f"criterion j failed: {said}")


def test_unrecorded_evidence_is_not_named_and_others_are_listed_by_id() -> None:
    success = _failed(_result("secret_check", evidence="the key", record_evidence=False),
                      _result("lint", evidence="3 warnings"))
    assert criteria_reason(success, _declared(secret_check="", lint="clean")) == (
        "criterion secret_check failed; also failed: lint")


def test_required_failures_come_before_advisory_ones() -> None:
    advisory = CriterionResult(id="style", kind="command", severity="advisory", passed=False)
    success = SuccessOutcome(passed=False, results=(advisory, _result("tests")),
                             failed_required=())
    assert criteria_reason(success, _declared()) == (
        "criterion tests failed; also failed: style")


def test_an_error_is_the_evidence_and_long_text_is_cut_on_one_line() -> None:
    success = _failed(_result("j", error="the judge could not run:\n" + "x" * 400))
    reason = criteria_reason(success, _declared(j="judged"))
    assert reason.startswith("criterion j failed (judged): the judge could not run: xxx")
    assert "\n" not in reason and reason.endswith("…")
    assert len(reason) < 220


def test_no_failed_criterion_known_says_so() -> None:
    assert criteria_reason(SuccessOutcome(passed=False), _declared()) == GENERIC
