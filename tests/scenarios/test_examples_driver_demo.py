"""``examples/driver-demo.agraph.yaml`` driven through ``rein next`` / ``rein submit`` the way
an IDE agent drives it (this test writes greet.py itself), with the gate answered by
``rein approvals``: the retry that feeds the failed ``command`` criterion back, then the end
of the ladder (``on_exhausted: fail``) and the gate's ``on_reject: fail``."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from rein.engine.run.record import record_problems
from tests.conftest import EXAMPLES
from tests.scenarios.harness import Scenario

GRAPH = EXAMPLES / "driver-demo.agraph.yaml"
WRONG = 'def greet(name):\n    """Greet."""\n    return "Hi " + name\n'
RIGHT = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'


def _next(scenario: Scenario) -> dict[str, Any]:
    code, out = scenario.rein("next", "--json")
    status = json.loads(out)
    assert code == status.get("exit_code", 3), out
    return status


def _submit(scenario: Scenario, module: str) -> tuple[int, dict[str, Any]]:
    """Write greet.py, then hand in the pending instruction's own example envelope."""
    pending = _next(scenario)
    assert (pending["status"], pending["node"]) == ("instruction", "write_module"), pending
    scenario.file("greet.py", module)
    scenario.file(".rein/inbox.json", json.dumps(pending["example"]))
    code, out = scenario.rein("submit", "--json")
    return code, json.loads(out)


def _start(scenario: Scenario, *modules: str) -> dict[str, Any]:
    scenario.copy(GRAPH)
    code, out = scenario.run(GRAPH.name)
    assert code == 3, out  # waiting for the driver: no worker is configured
    status: dict[str, Any] = {}
    for module in modules:
        code, status = _submit(scenario, module)
        assert code in (0, 1, 3), status
    return status


def _done(scenario: Scenario, code: int) -> dict[str, Any]:
    record = scenario.record()
    assert record_problems(record) == []
    expected = 0 if record["status"] == "succeeded" else 1
    last = _next(scenario)
    assert (last["status"], last["exit_code"]) == (
        ("done", 0) if expected == 0 else ("stopped", 1))
    assert code == expected
    return record


@pytest.fixture(autouse=True)
def _python3(scenario: Scenario) -> None:
    # The greets criterion runs `python3 -c ...`: this interpreter, whatever PATH holds.
    scenario.stub("python3", script=f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')


def test_a_wrong_module_is_fed_back_then_approved(scenario: Scenario) -> None:
    waiting = _start(scenario, WRONG, RIGHT)
    assert (waiting["status"], waiting["for"]) == ("waiting", "approval")
    [approval] = scenario.pending()
    assert (approval["kind"], approval["request"]["node"]) == ("gate", "review")
    code, _ = scenario.rein("approvals", "accept", approval["approval_id"], "--json")
    record = _done(scenario, code)
    assert record["status"] == "succeeded"
    assert scenario.statuses(record) == {"write_module": "succeeded", "review": "succeeded"}
    attempts = record["nodes"][0]["attempts"]
    assert [a["status"] for a in attempts] == ["criteria_failed", "succeeded"]
    assert {r["id"]: r["passed"] for r in attempts[0]["success"]["results"]} == {
        "module_exists": True, "greets": False}
    assert record["outputs"] == {"module": "greet.py"}


def test_the_retry_says_which_check_failed(scenario: Scenario) -> None:
    second = _start(scenario, WRONG)
    assert (second["status"], second["attempt"]) == ("instruction", 2)
    assert [c["id"] for c in second["feedback"]["failed_criteria"]] == ["greets"]


def test_two_wrong_modules_exhaust_the_retries_and_fail_the_run(scenario: Scenario) -> None:
    _start(scenario, WRONG, WRONG)
    assert scenario.pending() == []
    record = _done(scenario, 1)
    assert record["status"] == "failed"
    assert scenario.statuses(record) == {"write_module": "failed", "review": "skipped"}
    assert [a["status"] for a in record["nodes"][0]["attempts"]] == ["criteria_failed"] * 2


def test_a_rejected_module_fails_the_run(scenario: Scenario) -> None:
    _start(scenario, RIGHT)
    [approval] = scenario.pending()
    code, _ = scenario.rein("approvals", "decline", approval["approval_id"], "--json")
    record = _done(scenario, code)
    assert record["status"] == "failed"
    assert scenario.statuses(record) == {"write_module": "succeeded", "review": "failed"}
