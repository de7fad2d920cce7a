"""Budgets are checked after every attempt, not only before the next one starts (AGS §5.4,
§13): an attempt that went past a limit is caught even when nothing runs after it."""

from __future__ import annotations

from typing import Any

from rein.core.states import RunStatus
from rein.core.usage import Usage
from rein.engine.run.budget import BudgetTracker, Limits, Spent
from rein.engine.run.clock import StepClock
from tests.engine.test_semantics import go, graph, states, task

OUT = {"v": {"type": "string", "description": "v"}}
BOUND = {"first": {"type": "string", "description": "f", "from": "nodes.a.outputs.v"}}


def spend(cost: float = 0.0, tokens: int = 0, calls: int = 0) -> dict[str, Any]:
    return {"outputs": {"v": "x"},
            "usage": {"cost_usd": cost, "input_tokens": tokens, "tool_calls": calls}}


def attempts(record: dict[str, Any], node: str) -> list[dict[str, Any]]:
    [n] = [n for n in record["nodes"] if n["node_id"] == node and "scope_path" not in n]
    return n["attempts"]


def test_the_last_attempt_over_a_graph_cost_limit_stops_the_run(tmp_path: Any) -> None:
    data = graph({"a": task("a", outputs=OUT)}, ["a"], constraints={"max_cost_usd": 0.5})
    outcome, record = go(tmp_path, data, {"a": [spend(cost=0.7)]})
    assert outcome.status is RunStatus.FAILED  # nothing required is bound
    [rt061] = [d for d in record["diagnostics"] if d["code"] == "RT061"]
    assert rt061["message"] == "global limit max_cost_usd = 0.5 passed (0.7)"


def test_a_graph_overrun_with_a_bound_output_ends_partial(tmp_path: Any) -> None:
    data = graph({"a": task("a", outputs=OUT)}, ["a"], constraints={"max_cost_usd": 0.5},
                 outputs=BOUND)
    outcome, record = go(tmp_path, data, {"a": [spend(cost=0.7)]})
    assert outcome.status is RunStatus.PARTIAL  # §5.4: the running node finishes
    assert states(record) == {"a": "succeeded"}
    assert [d["code"] for d in record["diagnostics"]].count("RT061") == 1


def test_a_graph_overrun_cancels_what_has_not_started(tmp_path: Any) -> None:
    data = graph({"a": task("a", outputs=OUT), "b": task("b", depends_on=["a"])}, ["a"],
                 constraints={"max_total_tokens": 100}, outputs=BOUND)
    outcome, record = go(tmp_path, data, {"a": [spend(tokens=150)], "b": [spend()]})
    assert states(record) == {"a": "succeeded", "b": "cancelled"}
    assert outcome.status is RunStatus.PARTIAL


def test_spending_exactly_the_graph_limit_is_not_an_overrun(tmp_path: Any) -> None:
    data = graph({"a": task("a", outputs=OUT)}, ["a"], constraints={"max_cost_usd": 0.5},
                 outputs=BOUND)
    outcome, record = go(tmp_path, data, {"a": [spend(cost=0.5)]})
    assert outcome.status is RunStatus.SUCCEEDED
    assert not [d for d in record.get("diagnostics", []) if d["code"] == "RT061"]


def test_the_last_attempt_over_a_node_cost_limit_fails_the_node(tmp_path: Any) -> None:
    data = graph({"a": task("a", outputs=OUT, constraints={"max_cost_usd": 0.5})}, ["a"],
                 outputs=BOUND)
    outcome, record = go(tmp_path, data, {"a": [spend(cost=0.7)]})
    assert outcome.status is RunStatus.FAILED
    assert states(record) == {"a": "failed"}
    [attempt] = attempts(record, "a")
    assert attempt["status"] == "budget_exceeded"
    assert attempt["error"] == "budget_exceeded: node limit max_cost_usd 0.5 passed (0.7)"


def test_a_node_overrun_goes_to_the_ladder(tmp_path: Any) -> None:
    node = task("a", outputs=OUT, constraints={"max_total_tokens": 100},
                failure={"on_exhausted": "skip"})
    _, record = go(tmp_path, graph({"a": node}, ["a"]), {"a": [spend(tokens=101)]})
    assert states(record) == {"a": "skipped"}
    assert attempts(record, "a")[0]["status"] == "budget_exceeded"


def test_node_limits_are_summed_across_attempts(tmp_path: Any) -> None:
    node = task("a", outputs=OUT, constraints={"max_cost_usd": 1.0},
                failure={"retry": {"max_attempts": 3, "backoff": "none"}},
                success={"criteria": [{"id": "ok", "kind": "expression", "description": "third",
                                       "expr": "self.attempt >= 3"}]})
    outcome, record = go(tmp_path, graph({"a": node}, ["a"], constraints={"max_cost_usd": 9}),
                         {"a": [spend(cost=0.6), spend(cost=0.6), spend(cost=0.1)]})
    assert [a["status"] for a in attempts(record, "a")] == ["criteria_failed",
                                                            "budget_exceeded"]
    assert outcome.status is RunStatus.FAILED


def test_node_overrun_names_the_limit() -> None:
    from rein.engine.run.budget import node_overrun

    spent = Spent(input_tokens=70, output_tokens=40)
    assert node_overrun({"max_output_tokens": 40}, spent, Usage()) is None
    assert node_overrun({"max_total_tokens": 100}, spent, Usage()) == \
        "max_total_tokens 100 passed (110)"
    assert node_overrun({"max_tool_calls": 2}, spent, Usage(tool_calls=3)) == \
        "max_tool_calls 2 passed (3)"


def test_the_global_overrun_check_is_strict() -> None:
    clock = StepClock()
    tracker = BudgetTracker(limits=Limits(max_cost_usd=0.5, max_total_tokens=10),
                            started_at=clock.now())
    tracker.spent.add(Usage(cost_usd=0.5, input_tokens=10, output_tokens=0))
    assert tracker.overrun(clock.now()) is None
    tracker.spent.add(Usage(cost_usd=0.0, input_tokens=1, output_tokens=0))
    exc = tracker.overrun(clock.now())
    assert exc is not None and exc.code == "RT061" and exc.fields["limit"] == "max_total_tokens"
