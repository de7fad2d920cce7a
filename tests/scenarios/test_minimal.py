"""``minimal.agraph.yaml``: a task, then a gate answered through ``rein approvals``."""

from __future__ import annotations

import pytest

from rein.engine.run.record import record_problems
from tests.conftest import shared_path
from tests.scenarios.harness import Scenario, summary

MINIMAL = shared_path("ags-examples", "minimal.agraph.yaml")
pytestmark = pytest.mark.skipif(MINIMAL is None, reason="../shared is not present")

GUIDE = "# Contributing\n\n" + "Set up with make; run tests with make test.\n" * 20


def _setup(s: Scenario, attempts: list[dict]) -> None:
    assert MINIMAL is not None
    s.copy(MINIMAL)
    s.stub("npx")
    s.answers({"nodes": {"draft_contributing": attempts}})


def test_succeeds_once_the_maintainer_approves(scenario: Scenario) -> None:
    _setup(scenario, [{"outputs": {"contributing": "CONTRIBUTING.md"},
                       "files": {"CONTRIBUTING.md": GUIDE}}])
    code, out = scenario.run("minimal.agraph.yaml")
    assert code == 3
    assert summary(out)["status"] == "awaiting_human"
    [pending] = scenario.pending()
    assert pending["kind"] == "gate"
    assert pending["request"]["prompt"] == "Approve the new CONTRIBUTING.md?"
    assert pending["request"]["present"] == ["CONTRIBUTING.md"]
    assert scenario.answer_all("accept") == 0
    record = scenario.record()
    assert record["status"] == "succeeded"
    assert scenario.statuses(record) == {"draft_contributing": "succeeded",
                                         "maintainer_approval": "succeeded"}
    assert record["outputs"] == {"contributing_guide": "CONTRIBUTING.md"}
    assert record_problems(record) == []


def test_a_short_draft_is_retried_with_feedback(scenario: Scenario) -> None:
    _setup(scenario, [
        {"outputs": {"contributing": "CONTRIBUTING.md"}, "files": {"CONTRIBUTING.md": "stub"}},
        {"outputs": {"contributing": "CONTRIBUTING.md"}, "files": {"CONTRIBUTING.md": GUIDE}},
    ])
    code, _ = scenario.run("minimal.agraph.yaml")
    assert code == 3
    scenario.answer_all("accept")
    record = scenario.record()
    draft = record["nodes"][0]
    assert [a["status"] for a in draft["attempts"]] == ["criteria_failed", "succeeded"]
    failed = draft["attempts"][0]["success"]["results"][0]
    assert failed["id"] == "file_written" and failed["passed"] is False
    assert record["status"] == "succeeded"


def test_a_worker_failure_never_passes_on_existing_files(scenario: Scenario) -> None:
    _setup(scenario, [{"failure": "tool_error", "message": "editor crashed"}])
    scenario.file("CONTRIBUTING.md", GUIDE)  # would satisfy file_exists already
    code, _ = scenario.run("minimal.agraph.yaml")
    assert code == 1
    record = scenario.record()
    assert record["status"] == "failed"
    assert scenario.statuses(record) == {"draft_contributing": "failed",
                                         "maintainer_approval": "skipped"}
    assert [a["status"] for a in record["nodes"][0]["attempts"]] == ["failed"]
    assert "success" not in record["nodes"][0]["attempts"][0]


def test_a_declined_gate_fails_the_run(scenario: Scenario) -> None:
    _setup(scenario, [{"outputs": {"contributing": "CONTRIBUTING.md"},
                       "files": {"CONTRIBUTING.md": GUIDE}}])
    scenario.run("minimal.agraph.yaml")
    assert scenario.answer_all("decline") == 1
    record = scenario.record()
    assert record["status"] == "failed"
    assert record["nodes"][1]["human_events"][0]["outcome"] == "rejected"
    assert record_problems(record) == []


def test_without_a_worker_the_run_waits(scenario: Scenario) -> None:
    assert MINIMAL is not None
    scenario.copy(MINIMAL)
    code, out = scenario.run("minimal.agraph.yaml")
    assert code == 3
    assert summary(out)["status"] == "waiting"
    assert scenario.pending() == []


def test_a_waiting_run_continues_once_a_worker_is_configured(scenario: Scenario) -> None:
    assert MINIMAL is not None
    scenario.copy(MINIMAL)
    scenario.stub("npx")
    code, out = scenario.run("minimal.agraph.yaml")
    assert (code, summary(out)["status"]) == (3, "waiting")
    scenario.answers({"nodes": {"draft_contributing": [
        {"outputs": {"contributing": "CONTRIBUTING.md"}, "files": {"CONTRIBUTING.md": GUIDE}}]}})
    code, out = scenario.rein("resume", summary(out)["run_id"], "--json")
    assert (code, summary(out)["status"]) == (3, "awaiting_human")  # now at the gate
    assert scenario.answer_all("accept") == 0
