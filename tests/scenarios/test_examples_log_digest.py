"""``examples/log-digest.agraph.yaml`` run standalone through the command line with the
scripted worker (a test double): an ``until`` loop that shortens a draft until it fits,
the draft carried from one pass to the next, and ``on_max_iterations: succeed`` when it
never fits."""

from __future__ import annotations

from typing import Any

from rein.engine.run.record import record_problems
from tests.conftest import EXAMPLES
from tests.scenarios.harness import Scenario, summary

GRAPH = EXAMPLES / "log-digest.agraph.yaml"
FILES = ["logs/api-01.log", "logs/api-02.log"]


def _pass(i: int, words: int) -> dict[str, Any]:
    return {f"condense[{i}].shorten": [{"outputs": {"draft": f"draft {i}", "words": words}}]}


def _node(record: dict[str, Any], key: str) -> dict[str, Any]:
    return next(n for n in record["nodes"] if n.get("scope_path", n["node_id"]) == key)


def _run(scenario: Scenario, *words: int) -> dict[str, Any]:
    scenario.copy(GRAPH)
    scenario.file("logs/api-01.log", "01:00 error db timeout\n")
    scenario.file("logs/api-02.log", "01:05 restart api\n")
    nodes: dict[str, Any] = {"list_logs": [{"outputs": {"files": FILES}}]}
    for i, count in enumerate(words):
        nodes.update(_pass(i, count))
    scenario.answers({"nodes": nodes})
    code, out = scenario.run(GRAPH.name)
    assert (code, summary(out)["status"]) == (0, "succeeded"), out
    record = scenario.record()
    assert record_problems(record) == []
    return record


def test_the_loop_stops_once_the_draft_fits(scenario: Scenario) -> None:
    record = _run(scenario, 900, 380, 100)
    assert scenario.statuses(record) == {
        "list_logs": "succeeded", "condense": "succeeded",
        "condense[0].shorten": "succeeded", "condense[1].shorten": "succeeded",
    }
    assert record["outputs"] == {"digest": "draft 1"}
    loop = _node(record, "condense")
    assert loop["iterations"] == 2
    # carry: draft → previous_draft, empty on the first pass
    assert [_node(record, f"condense[{i}].shorten")["inputs"] for i in range(2)] == [
        {"previous": ""}, {"previous": "draft 0"}]


def test_a_draft_that_never_fits_still_succeeds_after_three_passes(
        scenario: Scenario) -> None:
    record = _run(scenario, 900, 700, 500)
    assert scenario.statuses(record) == {
        "list_logs": "succeeded", "condense": "succeeded",
        **{f"condense[{i}].shorten": "succeeded" for i in range(3)},
    }
    assert record["outputs"] == {"digest": "draft 2"}
    assert _node(record, "condense")["iterations"] == 3
    assert _node(record, "condense[2].shorten")["inputs"] == {"previous": "draft 1"}


def test_no_log_files_fail_the_run_before_any_pass(scenario: Scenario) -> None:
    scenario.copy(GRAPH)
    scenario.answers({"nodes": {"list_logs": [{"outputs": {"files": []}}]}})
    code, out = scenario.run(GRAPH.name)
    assert (code, summary(out)["status"]) == (1, "failed"), out
    record = scenario.record()
    assert record_problems(record) == []
    states = scenario.statuses(record)
    assert states == {"list_logs": "failed", "condense": "skipped"}  # no pass ran
    [attempt] = _node(record, "list_logs")["attempts"]
    assert [(r["id"], r["passed"]) for r in attempt["success"]["results"]] == [
        ("found", False)]
