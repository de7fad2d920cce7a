"""Loops (while, until, repeat; on_max_iterations; carry, collect, loop.previous) and maps
(fail_fast, threshold, continue; max_items with truncate and fail; over not an array)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.core.states import ApprovalStatus, RunStatus
from tests.scenarios.build import Run, graph, inp, out, states, task


def counter_loop(mode: str, condition: str | None, limit: int, **extra: Any) -> dict[str, Any]:
    """A loop whose body bumps ``count`` once per iteration (carried to the next one)."""
    block: dict[str, Any] = {
        "mode": mode, "max_iterations": limit,
        "carry": {"next": "count"},
        "collect": {"final": "nodes.bump.outputs.next",
                    "before": "default(loop.previous.final, -1)"},
        "body": {"params": {"count": {"type": "integer", "description": "so far",
                                      "default": 0}},
                 "entrypoints": ["bump"],
                 "nodes": {"bump": task("bump", outputs=out("next", type="integer"), inputs={
                     "count": inp("params.count", "integer")})}},
        **extra,
    }
    if condition is not None:
        block["condition"] = condition
    return {"type": "loop", "title": "count", "description": "Count.", "loop": block}


def bumps(n: int) -> dict[str, Any]:
    return {f"count[{i}].bump": [{"outputs": {"next": i + 1}}] for i in range(n)}


def test_while_tests_before_each_iteration(tmp_path: Path) -> None:
    data = graph({"count": counter_loop("while", "default(nodes.bump.outputs.next, 0) < 3", 10)}, ["count"])
    run = Run(tmp_path, data, bumps(10))
    assert run.start().status is RunStatus.SUCCEEDED
    loop = run.node("count")
    assert loop["iterations"] == 3
    assert loop["outputs"] == {"final": 3, "before": 2}  # loop.previous: iteration 2's values
    assert [run.node(f"count[{i}].bump")["inputs"] for i in range(3)] == [
        {"count": 0}, {"count": 1}, {"count": 2}]  # carry fed each next iteration


def test_while_false_at_the_start_runs_no_iteration(tmp_path: Path) -> None:
    data = graph({"count": counter_loop("while", "params.count > 0", 5)}, ["count"])
    run = Run(tmp_path, data, bumps(5))
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("count")["iterations"] == 0
    assert run.worker.calls == []


def test_until_tests_after_each_iteration(tmp_path: Path) -> None:
    data = graph({"count": counter_loop("until", "nodes.bump.outputs.next >= 2", 5)},
                 ["count"])
    run = Run(tmp_path, data, bumps(5))
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("count")["iterations"] == 2
    assert run.node("count")["outputs"] == {"final": 2, "before": 1}


def test_repeat_runs_exactly_max_iterations_and_succeeds(tmp_path: Path) -> None:
    data = graph({"count": counter_loop("repeat", None, 3)}, ["count"])
    run = Run(tmp_path, data, bumps(5))
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("count")["iterations"] == 3
    assert "RT021" not in run.codes()


@pytest.mark.parametrize(("policy", "run_status", "node_status"), [
    ("succeed", RunStatus.SUCCEEDED, "succeeded"),
    ("fail", RunStatus.FAILED, "failed"),
])
def test_on_max_iterations(tmp_path: Path, policy: str, run_status: RunStatus,
                           node_status: str) -> None:
    data = graph({"count": counter_loop("until", "nodes.bump.outputs.next > 99", 2,
                                        on_max_iterations=policy)}, ["count"])
    run = Run(tmp_path, data, bumps(5))
    assert run.start().status is run_status
    assert run.node("count")["status"] == node_status
    assert run.node("count")["outputs"] == {"final": 2, "before": 1}
    assert "RT021" in run.codes()


def test_on_max_iterations_escalate_to_a_node(tmp_path: Path) -> None:
    loop = counter_loop("until", "nodes.bump.outputs.next > 99", 2,
                        on_max_iterations="escalate")
    loop["outputs"] = out("final", type="integer")
    loop["failure"] = {"escalation": {"to": "node", "node": "finish"}}
    data = graph({"count": loop, "finish": task("finish", outputs=out("final", type="integer"))},
                 ["count"])
    run = Run(tmp_path, data, {**bumps(5), "finish": [{"outputs": {"final": 100}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    node = run.node("count")
    assert node["escalated"] is True and node["outputs"] == {"final": 100}


def test_a_failed_iteration_fails_the_loop(tmp_path: Path) -> None:
    data = graph({"count": counter_loop("repeat", None, 3)}, ["count"])
    answers = bumps(3)
    answers["count[1].bump"] = [{"failure": "tool_error"}]
    run = Run(tmp_path, data, answers)
    assert run.start().status is RunStatus.FAILED
    assert run.node("count")["iterations"] == 2
    assert "count[2].bump" not in states(run.record())


def fan(policy: str, items: str = "params.items", **extra: Any) -> dict[str, Any]:
    return {"type": "map", "title": "fan", "description": "Fan out.",
            "map": {"over": items, "as": "it", "max_items": extra.pop("max_items", 10),
                    "on_item_failure": policy,
                    "collect": {"got": "nodes.work.outputs.v"},
                    "body": {"entrypoints": ["work"], "nodes": {"work": task(
                        "work", outputs=out("v"), inputs={"it": inp("it")})}},
                    **extra}}


ITEMS = {"params": {"items": {"type": "array", "description": "items",
                              "default": ["a", "b", "c", "d"]}}}


def item_answers(fail: set[int], n: int = 4) -> dict[str, Any]:
    return {f"fan[{i}].work": [{"failure": "tool_error"} if i in fail
                               else {"outputs": {"v": f"v{i}"}}] for i in range(n)}


def test_fail_fast_cancels_the_items_not_yet_started(tmp_path: Path) -> None:
    data = graph({"fan": fan("fail_fast")}, ["fan"], **ITEMS)
    run = Run(tmp_path, data, item_answers({1}))
    assert run.start().status is RunStatus.FAILED
    assert run.worker.calls == [("fan[0].work", 1), ("fan[1].work", 1)]  # 2 and 3 never ran
    assert run.node("fan")["status"] == "failed"


def test_threshold_passes_with_enough_successes(tmp_path: Path) -> None:
    data = graph({"fan": fan("threshold", min_successes=3)}, ["fan"], **ITEMS)
    run = Run(tmp_path, data, item_answers({2}))
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("fan")["outputs"] == {"got": ["v0", "v1", None, "v3"]}
    assert run.node("fan")["x-rein-item-successes"] == 3


def test_threshold_fails_below_min_successes(tmp_path: Path) -> None:
    data = graph({"fan": fan("threshold", min_successes=3)}, ["fan"], **ITEMS)
    run = Run(tmp_path, data, item_answers({0, 2}))
    assert run.start().status is RunStatus.FAILED
    assert len(run.worker.calls) == 4  # threshold runs every item


def test_over_limit_truncate_keeps_the_first_items(tmp_path: Path) -> None:
    data = graph({"fan": fan("continue", max_items=2, on_over_limit="truncate")}, ["fan"],
                 **ITEMS)
    run = Run(tmp_path, data, item_answers(set()))
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("fan")["outputs"] == {"got": ["v0", "v1"]}
    [rt026] = [d for d in run.record()["diagnostics"] if d["code"] == "RT026"]
    assert rt026["severity"] == "warning"


def test_over_limit_fail_fails_before_any_item(tmp_path: Path) -> None:
    data = graph({"fan": fan("continue", max_items=2)}, ["fan"], **ITEMS)
    run = Run(tmp_path, data, item_answers(set()))
    assert run.start().status is RunStatus.FAILED
    assert run.worker.calls == []
    [rt026] = [d for d in run.record()["diagnostics"] if d["code"] == "RT026"]
    assert rt026["severity"] == "error"


def test_over_that_is_not_an_array_is_rt025(tmp_path: Path) -> None:
    params = {"params": {"items": {"type": "string", "description": "oops",
                                   "default": "abc"}}}
    data = graph({"fan": fan("continue")}, ["fan"], **params)
    run = Run(tmp_path, data, item_answers(set()))
    assert run.start().status is RunStatus.FAILED
    assert "RT025" in run.codes() and run.worker.calls == []


def test_a_map_item_waiting_for_a_person_pauses_the_map(tmp_path: Path) -> None:
    data = graph({"fan": fan("continue")}, ["fan"], **ITEMS)
    data["nodes"]["fan"]["map"]["body"]["nodes"]["work"]["human"] = [
        {"at": "after_outputs", "mode": "approve", "when": "it == 'b'"}]
    run = Run(tmp_path, data, item_answers(set()))
    assert run.start().status is RunStatus.AWAITING_HUMAN
    assert run.answer(ApprovalStatus.ACCEPTED).status is RunStatus.SUCCEEDED
    assert run.node("fan")["outputs"] == {"got": ["v0", "v1", "v2", "v3"]}
