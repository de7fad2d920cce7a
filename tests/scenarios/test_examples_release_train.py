"""``examples/release-train.agraph.yaml`` run end to end through the command line with the
scripted worker (a test double), a stub ``make`` on ``PATH`` and every approval answered with
``rein approvals``: the retry that feeds a failed criterion back, a review and an approve
gate, the ``before_side_effects`` checkpoint, the agent decision into the ``join: any``
fan-in, and a failed smoke test routed over the ``on_failure`` edge to the rollback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rein.engine.run.record import record_problems
from tests.conftest import EXAMPLES
from tests.scenarios.harness import Scenario

GRAPH = EXAMPLES / "release-train.agraph.yaml"
FIXTURES = Path(__file__).parent / "fixtures" / "examples"


def _node(record: dict[str, Any], key: str) -> dict[str, Any]:
    return next(n for n in record["nodes"] if n.get("scope_path", n["node_id"]) == key)


def _setup(scenario: Scenario, **changes: Any) -> None:
    scenario.copy(GRAPH)
    scenario.stub("make", script=(FIXTURES / "make").read_text())
    script = yaml.safe_load((FIXTURES / "release-train.answers.yaml").read_text())
    script["nodes"].update(changes)
    scenario.answers(script)


def _answer_in_order(scenario: Scenario) -> tuple[list[tuple[str, str]], int]:
    """Accept what is pending, one at a time; say what was asked, (kind, node), and the
    exit code of the last answer."""
    asked: list[tuple[str, str]] = []
    code = 3
    while code == 3:
        pending = scenario.pending()
        if not pending:
            break
        [first] = pending  # max_parallel_nodes: 1, so one question at a time
        asked.append((first["kind"], str(first["request"].get("node"))))
        code, _ = scenario.rein("approvals", "accept", first["approval_id"], "--json")
    return asked, code


def _attempts(record: dict[str, Any], key: str) -> list[str]:
    return [a["status"] for a in _node(record, key).get("attempts", [])]


def test_a_risky_release_retries_its_notes_and_asks_at_every_gate(scenario: Scenario) -> None:
    _setup(scenario)
    code, out = scenario.run(GRAPH.name, "--param", "version=2.4.1")
    assert code == 3, out
    assert _answer_in_order(scenario) == ([
        ("gate", "notes_review"), ("gate", "release_approval"),
        ("checkpoint", "deploy"),  # before_side_effects, before the deploy attempt
        ("criterion", "None"),  # the graph-level human criterion
    ], 0)
    record = scenario.record()
    assert record_problems(record) == []
    assert record["status"] == "succeeded"
    assert scenario.statuses(record) == {
        "collect_changes": "succeeded", "draft_notes": "succeeded",
        "notes_review": "succeeded", "assess_risk": "succeeded",
        "release_approval": "succeeded", "deploy": "succeeded", "smoke_test": "succeeded",
        "rollback": "skipped",  # the on_failure edge did not fire
        "announce": "succeeded",
    }
    # The retry fed the failed regex back; the second attempt passed every criterion.
    assert _attempts(record, "draft_notes") == ["criteria_failed", "succeeded"]
    first = _node(record, "draft_notes")["attempts"][0]["success"]["results"]
    assert {r["id"]: r["passed"] for r in first} == {
        "notes_file": False, "heading_names_version": False, "reads_well": True}
    assert _node(record, "assess_risk")["outputs"]["decision"] == "high_risk"
    [checkpoint] = _node(record, "deploy")["human_events"]
    assert (checkpoint["at_stage"], checkpoint["checkpoint_id"], checkpoint["outcome"]) == (
        "before_side_effects", "before_rollout", "approved")
    assert record["outputs"]["deployment_id"] == "dep-2.4.1-7"
    assert [(r["id"], r["passed"]) for r in record["graph_success"]["results"]] == [
        ("live", True), ("confirmed", True)]


def test_a_failed_smoke_test_rolls_back_over_the_edge_and_by_compensation(
        scenario: Scenario) -> None:
    _setup(scenario, assess_risk=[{"decision": "low_risk",
                                   "outputs": {"reasoning": "one small fix"}}])
    scenario.file("smoke-fails", "")  # the stub make's smoke target exits 1
    code, out = scenario.run(GRAPH.name, "--param", "version=2.4.1")
    assert code == 3, out
    # low_risk: the approve gate is routed around, deploy's join: any fires on one edge.
    assert _answer_in_order(scenario) == ([("gate", "notes_review"),
                                           ("checkpoint", "deploy")], 1)
    record = scenario.record()
    assert record_problems(record) == []
    assert record["status"] == "failed"
    assert scenario.statuses(record) == {
        "collect_changes": "succeeded", "draft_notes": "succeeded",
        "notes_review": "succeeded", "assess_risk": "succeeded",
        "release_approval": "skipped", "deploy": "succeeded",
        "smoke_test": "failed",
        "rollback": "succeeded",  # over the on_failure edge "unhealthy"
        "announce": "skipped",
        "deploy~rollback": "succeeded",  # deploy's compensation, as the run failed
    }
    smoke = _node(record, "smoke_test")["attempts"][-1]["success"]["results"]
    assert [(r["id"], r["passed"]) for r in smoke] == [("healthy", False)]
    assert _node(record, "rollback")["inputs"] == {"deployment": "dep-2.4.1-7"}
    assert record["outputs"]["rollback"] == "staging back on 2.4.0"
    assert "announcement" not in record["outputs"]
    assert "graph_success" not in record  # a failed run is not judged
