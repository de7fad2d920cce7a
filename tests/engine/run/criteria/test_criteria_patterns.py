"""The regex criterion and `expect_stdout_matches` on an agent's text: linear time, or CRIT008.

``^(\\w+\\s?)*$`` on the 41 characters of the report held `rein submit` and its run lock for
over 20 s in Python's backtracking ``re``; one more character doubles that. Here it is
matched on that text and on 200,000 characters: a backtracking matcher never returns, so
these tests fail by the suite's timeout on one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from criteria_helpers import check

from rein.core.states import RunStatus
from tests.scenarios.build import Run, graph, out, task

EXPONENTIAL = r"^(\w+\s?)*$"
REPORTED = "a" * 41 + "!"
LONG = "ab " * 66_666 + "!"


@pytest.mark.parametrize("text", [REPORTED, LONG])
def test_the_reported_pattern_is_judged_on_an_agents_output(ctx_for, text: str) -> None:
    result = check({"id": "r", "kind": "regex", "output": "log", "pattern": EXPONENTIAL},
                   ctx_for({"log": text}))
    assert (result.passed, result.error) == (False, None)
    assert "found no match in output 'log'" in result.evidence


def test_the_reported_pattern_on_a_commands_stdout(ctx_for) -> None:
    result = check({"id": "c", "kind": "command", "run": f"printf '{REPORTED}'",
                    "expect_stdout_matches": EXPONENTIAL}, ctx_for())
    assert not result.passed and result.evidence["stdout_matched"] is False


def test_a_pattern_that_needs_backtracking_is_crit008_with_the_construct(ctx_for) -> None:
    result = check({"id": "r", "kind": "regex", "output": "log", "pattern": r"(\w+)\s\1"},
                   ctx_for({"log": "the the"}))
    assert (result.passed, result.error_code) == (False, "CRIT008")
    assert result.error.startswith(r"pattern '(\\w+)\\s\\1' uses a backreference")
    assert "RE2 syntax" in result.error
    command = check({"id": "c", "kind": "command", "run": "true",
                     "expect_stdout_matches": "ok(?!ay)"}, ctx_for())
    assert command.error_code == "CRIT008" and "negative lookahead" in command.error


def test_a_match_is_told_with_its_text_and_offset(ctx_for) -> None:
    result = check({"id": "r", "kind": "regex", "output": "log", "pattern": r"\d+ passed"},
                   ctx_for({"log": "collected 3\n3 passed\n"}))
    assert result.passed
    assert result.evidence == "/\\d+ passed/ matched '3 passed' at offset 12 of output 'log'"


def test_a_run_with_the_reported_pattern_ends_instead_of_hanging(tmp_path: Path) -> None:
    node = task("a", outputs=out("log"), success={"criteria": [
        {"id": "words", "kind": "regex", "description": "words", "output": "log",
         "pattern": EXPONENTIAL}]})
    run = Run(tmp_path, graph({"a": node}, ["a"]), {"a": [{"outputs": {"log": REPORTED}}]})
    assert run.start().status is RunStatus.FAILED
    attempt = run.node("a")["attempts"][-1]
    assert attempt["status"] == "criteria_failed"


@pytest.mark.parametrize(("criterion", "pointer", "code"), [
    ({"kind": "regex", "output": "log", "pattern": "(?<=x)y"}, "/pattern", "CRIT008"),
    ({"kind": "regex", "output": "log", "pattern": "(unclosed"}, "/pattern", "CRIT001"),
    ({"kind": "command", "run": "true", "expect_stdout_matches": "a++"},
     "/expect_stdout_matches", "CRIT008"),
])
def test_a_pattern_rein_will_not_run_refuses_the_graph_before_it_starts(
        tmp_path: Path, criterion: dict, pointer: str, code: str) -> None:
    from rein.engine.run.runner import PrepareFailed

    node = task("a", outputs=out("log"), success={"criteria": [
        {"id": "c", "description": "d", **criterion}]})
    run = Run(tmp_path, graph({"a": node}, ["a"]), {"a": [{"outputs": {"log": "x"}}]})
    with pytest.raises(PrepareFailed) as info:
        run.start()
    assert info.value.code == code
    assert info.value.location.pointer == "/nodes/a/success/criteria/0" + pointer
    assert "node 'a', criterion 'c'" in info.value.message
    assert run.worker.calls == []
