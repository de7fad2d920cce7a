"""The one-line reason of a criteria failure: the first failed criterion with its
description and recorded evidence, the others by id."""

from __future__ import annotations

import json

from rein.engine.kinds.attempt import GENERIC, criteria_reason, evidence_line


def test_a_command_says_its_exit_code_and_the_last_line_it_printed() -> None:
    evidence = json.dumps({"exit_code": 2, "expected_exit_code": 0,
                           "stdout": "collected 48\n\n2 failed, 46 passed\n", "stderr": "x"})
    assert criteria_reason([{"id": "tests", "description": "the tests pass",
                             "evidence": evidence}]) == (
        "criterion tests failed (the tests pass): exit 2: 2 failed, 46 passed")


def test_a_timed_out_command_and_a_silent_one() -> None:
    assert evidence_line({"exit_code": -9, "timed_out": True, "stdout": "", "stderr": ""}) \
        == "timed out"
    assert evidence_line({"exit_code": 1, "stdout": "", "stderr": "boom\n"}) == "exit 1: boom"
    assert evidence_line({"exit_code": 0, "stdout_matched": False, "stdout": "ok"}) == (
        "exit 0, stdout did not match: ok")


def test_unrecorded_evidence_is_not_named_and_others_are_listed_by_id() -> None:
    failed = [{"id": "secret_check", "description": "", "evidence": None},
              {"id": "lint", "description": "clean", "evidence": "3 warnings"}]
    assert criteria_reason(failed) == "criterion secret_check failed; also failed: lint"


def test_an_error_is_the_evidence_and_long_text_is_cut_on_one_line() -> None:
    reason = criteria_reason([{"id": "j", "description": "judged",
                               "error": "the judge could not run:\n" + "x" * 400}])
    assert reason.startswith("criterion j failed (judged): the judge could not run: xxx")
    assert "\n" not in reason and reason.endswith("…")
    assert len(reason) < 220


def test_no_failed_criterion_known_says_so() -> None:
    assert criteria_reason([]) == GENERIC
