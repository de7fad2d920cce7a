"""``examples/no-worker.agraph.yaml`` run end to end through the command line: no worker, no
model, no person. Expression decisions, notify gates, a ``map``, a ``repeat`` loop and an
``inline`` subgraph; expression criteria only. Both branches of each decision are taken."""

from __future__ import annotations

from typing import Any

from rein.engine.run.record import record_problems
from tests.conftest import EXAMPLES
from tests.scenarios.harness import Scenario, summary

GRAPH = EXAMPLES / "no-worker.agraph.yaml"


def _node(record: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in record["nodes"] if n["node_id"] == node_id)


def _run(scenario: Scenario, *params: str) -> dict[str, Any]:
    scenario.copy(GRAPH)
    extra = [arg for p in params for arg in ("--param", p)]
    code, out = scenario.run(GRAPH.name, *extra)
    assert (code, summary(out)["status"]) == (0, "succeeded"), out
    assert scenario.pending() == []  # notify gates never wait for an answer
    record = scenario.record()
    assert record_problems(record) == []
    return record


def test_the_default_checklist_takes_the_full_pass_to_a_ready_verdict(
        scenario: Scenario) -> None:
    record = _run(scenario)
    assert record["status"] == "succeeded"
    assert scenario.statuses(record) == {
        "size_up": "succeeded", "announce_start": "succeeded",
        "classify_items": "succeeded", "count_down": "succeeded", "verdict": "succeeded",
        **{f"classify_items[{i}].bucket": "succeeded" for i in range(5)},
        **{f"count_down[{i}].tick": "succeeded" for i in range(3)},
    }
    assert _node(record, "size_up")["outputs"]["decision"] == "full_pass"
    assert record["outputs"] == {"buckets": ["docs", "docs", "tests", "tests", "other"],
                                 "verdict": "ready"}
    assert _node(record, "count_down")["outputs"]["last_tick"] == "follow_up"
    assert [(c["id"], c["passed"]) for c in record["graph_success"]["results"]] == [
        ("all_classified", True), ("verdict_known", True)]


def test_a_short_checklist_takes_the_quick_pass_and_holds(scenario: Scenario) -> None:
    record = _run(scenario, 'checklist=["pyproject", "docs/changelog"]', "min_docs=2")
    assert record["params"]["checklist"] == ["pyproject", "docs/changelog"]
    assert scenario.statuses(record) == {
        "size_up": "succeeded", "announce_start": "succeeded",
        "classify_items": "succeeded", "count_down": "succeeded", "verdict": "succeeded",
        "classify_items[0].bucket": "succeeded", "classify_items[1].bucket": "succeeded",
        **{f"count_down[{i}].tick": "succeeded" for i in range(3)},
    }
    assert _node(record, "size_up")["outputs"]["decision"] == "quick_pass"
    assert record["outputs"] == {"buckets": ["other", "docs"], "verdict": "hold"}
