"""Every node evaluates its ``success`` block (AGS §17.7 step 9). A decision chosen by an
expression still does: the label is chosen, then the harness checks it like any other
outcome. So do gates, loops, maps and subgraphs once they reach their end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.core.states import RunStatus
from tests.scenarios.build import Run, graph, task


def _graph(criteria: list[dict[str, Any]], **failure: Any) -> dict[str, Any]:
    pick: dict[str, Any] = {
        "type": "decision", "title": "pick", "description": "Pick a way.",
        "decision": {"evaluator": "expression", "question": "Which way?", "branches": [
            {"label": "left", "description": "Left.", "when": "params.way == 'left'"},
            {"label": "right", "description": "Right.", "when": "params.way == 'right'"}]},
        "success": {"criteria": criteria},
    }
    if failure:
        pick["failure"] = failure
    return graph({
        "pick": pick,
        "after": task("after", depends_on=["pick"]),
    }, ["pick"], params={"way": {"type": "string", "description": "way", "default": "left"}})


def _expr(expr: str) -> dict[str, Any]:
    return {"id": "allowed", "kind": "expression", "description": "only left is allowed",
            "expr": expr}


def test_a_failed_success_block_fails_the_decision_and_nothing_after_it_runs(
        tmp_path: Path) -> None:
    run = Run(tmp_path, _graph([_expr("self.outputs.decision == 'right'")]),
              {"after": [{"outputs": {}}]})
    assert run.start().status is RunStatus.FAILED
    pick = run.node("pick")
    assert pick["status"] == "failed"
    [attempt] = pick["attempts"]
    assert attempt["status"] == "criteria_failed"
    [result] = attempt["success"]["results"]
    assert (result["id"], result["passed"]) == ("allowed", False)
    assert run.node("after")["status"] == "skipped"
    assert run.worker.calls == []


def test_a_passed_success_block_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    run = Run(tmp_path, _graph([_expr("self.outputs.decision == 'left'")]),
              {"after": [{"outputs": {}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    pick = run.node("pick")
    assert (pick["status"], pick["decision"]) == ("succeeded", "left")
    [attempt] = pick["attempts"]
    assert attempt["status"] == "succeeded"
    assert [r["passed"] for r in attempt["success"]["results"]] == [True]
    assert run.worker.calls == [("after", 1)]


def test_the_ladder_takes_a_failed_decision_and_a_retry_checks_again(tmp_path: Path) -> None:
    # The command fails the first time and passes the second: retried under failure.retry.
    check = {"id": "marker", "kind": "command", "description": "the marker is there",
             "run": "test -f seen || { touch seen; exit 1; }", "timeout_seconds": 10}
    data = _graph([check], retry={"max_attempts": 2, "backoff": "none",
                                  "retry_on": ["criteria_failed"]})
    run = Run(tmp_path, data, {"after": [{"outputs": {}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    pick = run.node("pick")
    assert [a["status"] for a in pick["attempts"]] == ["criteria_failed", "succeeded"]
    assert pick["decision"] == "left"


def test_on_exhausted_skip_absorbs_a_failed_decision(tmp_path: Path) -> None:
    data = _graph([_expr("false")], on_exhausted="skip")
    run = Run(tmp_path, data, {"after": [{"outputs": {}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("pick")["status"] == "skipped"
    assert run.node("after")["status"] == "skipped"


BODY = {"entrypoints": ["w"], "nodes": {"w": task("w")}}
OTHER_KINDS = {
    "gate": {"type": "gate", "gate": {"mode": "notify", "prompt": "Done."}},
    "loop": {"type": "loop", "loop": {"mode": "repeat", "max_iterations": 1, "body": BODY}},
    "map": {"type": "map", "map": {"over": "[1, 2]", "as": "it", "max_items": 5,
                                   "body": BODY}},
    "subgraph": {"type": "subgraph", "subgraph": {"inline": BODY}},
}


@pytest.mark.parametrize("kind", sorted(OTHER_KINDS))
@pytest.mark.parametrize("passes", [True, False])
def test_every_kind_evaluates_its_success_block(tmp_path: Path, kind: str,
                                                passes: bool) -> None:
    node = {"title": kind, "description": f"A {kind}.", **OTHER_KINDS[kind],
            "success": {"criteria": [_expr("true" if passes else "false")]}}
    data = graph({"x": node, "after": task("after", depends_on=["x"])}, ["x"])
    run = Run(tmp_path, data, {"w": [{"outputs": {}}], "after": [{"outputs": {}}]})
    assert run.start().status is (RunStatus.SUCCEEDED if passes else RunStatus.FAILED)
    x = run.node("x")
    assert x["status"] == ("succeeded" if passes else "failed")
    assert [r["passed"] for r in x["x-rein-success"]["results"]] == [passes]
    assert run.node("after")["status"] == ("succeeded" if passes else "skipped")
