"""A run's usage totals, summed from the attempts' facts each store groups for them.

The store hands back attempts grouped (:class:`rein.store.rows.AttemptFacts`: a count and
the figures summed); SQLite groups and sums them in the database. What the totals say is
what every attempt's record says: these runs mix every case the totals tell apart.
"""

from __future__ import annotations

from typing import Any

from rein.core.ids import NodeKey, RunId
from rein.core.states import NodeStatus, RunStatus
from rein.engine.run.record import usage_of, usage_sources, usage_with_sources
from rein.store.base import NodeRow, RunRow, Transition
from rein.store.sql.runs import facts_of, grouped

T = "2026-01-01T00:00:00Z"


def _usage(i: int, o: Any, t: Any, cost: Any, **more: Any) -> dict[str, Any]:
    return {"input_tokens": i, "output_tokens": o, "total_tokens": t, "cost_usd": cost,
            **more}


def _store_run(store: Any, run_id: str, nodes: list[tuple[str, str, NodeStatus, dict[str, Any]]],
               parent: str | None = None) -> None:
    store.create_run(RunRow(run_id=RunId(run_id), graph_id="g", graph_path="g.agraph.yaml",
                            graph_digest="sha256-x=", status=RunStatus.RUNNING, started_at=T,
                            parent_run_id=None if parent is None else RunId(parent)),
                     event_type="run/started", payload={})
    for key, type_, status, record in nodes:
        store.transition(RunId(run_id), "node/finished", {"node": key}, T, Transition(
            node=NodeRow(run_id=RunId(run_id), node_key=NodeKey(key), node_id=key,
                         scope_path="", type=type_, status=status,
                         record={"node_id": key, **record})))


def _family(store: Any) -> None:
    """A run ``p`` and its child ``c``: retried tasks, a gate, a loop run twice, a task
    still in flight, and two driver's turns (one attributed, one self-reported)."""
    ok, failed, running = NodeStatus.SUCCEEDED, NodeStatus.FAILED, NodeStatus.RUNNING
    _store_run(store, "p", [
        ("n1", "task", ok, {"started_at": T, "attempts": [
            {"attempt": 1, "status": "failed", "usage": _usage(3, 4, 7, 0.25, tool_calls=1)},
            {"attempt": 2, "status": "succeeded",
             "usage": _usage(5, 6, 11, 0.5, tool_calls=2)}]}),
        ("n2", "gate", ok, {"started_at": T}),
        ("n3", "task", NodeStatus.SKIPPED, {}),
        ("n4", "loop", ok, {"started_at": T, "attempts": [
            {"attempt": 1, "status": "succeeded", "usage": _usage(1, 1, 2, 0.125)},
            {"attempt": 2, "status": "succeeded", "usage": _usage(1, 1, 2, 0.125)}]}),
        ("n5", "task", running, {"started_at": T, "attempts": [
            {"attempt": 1, "status": "failed", "usage": _usage(1, 1, 2, 0.125)},
            {"attempt": 2, "status": None}]}),
        ("n6", "gate", failed, {})])
    _store_run(store, "c", [
        ("m1", "task", ok, {"started_at": T, "attempts": [
            {"attempt": 1, "status": "succeeded", "x-rein-driver-token": "t1",
             "x-rein-usage-source": "self-reported", "usage": _usage(100, 100, 200, 9.0)}]}),
        ("m2", "task", ok, {"started_at": T, "attempts": [
            {"attempt": 1, "status": "succeeded", "x-rein-driver-token": "t2",
             "x-rein-usage-source": "self-reported", "usage": _usage(7, 8, 15, 0.0625)}]})],
        parent="p")
    store.transition(RunId("c"), "usage/attributed", {
        "token": "t1", "usage": _usage(10, 20, 30, 1.0)}, T, Transition())


def test_a_family_s_totals_count_every_attempt_once(any_store: Any) -> None:
    _family(any_store)
    # Executions: n1's two attempts, the gate n2, the loop n4 once, n5's two, m1, m2.
    # m1's usage is what rein attributed to its turn, not what the agent said.
    want = {"input_tokens": 8 + 2 + 1 + 10 + 7, "output_tokens": 10 + 2 + 1 + 20 + 8,
            "total_tokens": 18 + 4 + 2 + 30 + 15, "cost_usd": 0.75 + 0.25 + 0.125 + 1.0
            + 0.0625, "tool_calls": 3, "node_executions": 8}
    assert usage_of(any_store, "p", include_children=True) == want
    # A continuation adopts n5's closed failure only: its attempt in flight runs again.
    assert usage_of(any_store, "p", include_children=True, settled_only=True) == {
        **want, "node_executions": 7}
    assert usage_of(any_store, "p")["total_tokens"] == 24
    sources = ["attributed", "measured", "self-reported"]
    assert usage_sources(any_store, "p") == sources
    assert usage_with_sources(any_store, "p") == {**want, "sources": sources}


def test_a_figure_not_given_as_a_number_is_unknown_in_the_total(any_store: Any) -> None:
    ok = NodeStatus.SUCCEEDED
    _store_run(any_store, "u", [
        ("k1", "task", ok, {"attempts": [{"status": "succeeded",
                                          "usage": _usage(1, True, 2, 0.5, tool_calls=1)}]}),
        ("k2", "task", ok, {"attempts": [{"status": "succeeded",
                                          "x-rein-driver-token": "t3"}]}),
        ("k3", "task", ok, {"attempts": [{"status": "succeeded",
                                          "usage": _usage(2, 2, "4", 0, tool_calls=0)}]}),
        ("k4", "task", ok, {"attempts": [{"status": "succeeded", "usage": [1, 2]}]})])
    assert usage_with_sources(any_store, "u") == {
        "input_tokens": 3, "output_tokens": None, "total_tokens": None, "cost_usd": 0.5,
        "tool_calls": 1, "node_executions": 4, "sources": ["measured", "unknown"]}


def test_alike_attempts_come_back_as_one_whatever_their_number(any_store: Any) -> None:
    ok = NodeStatus.SUCCEEDED
    alike = [(f"a{i}", "task", ok, {"started_at": T, "attempts": [
        {"status": "succeeded", "usage": _usage(2, 3, 5, 0.25, tool_calls=i % 3)}]})
        for i in range(40)]
    odd = [("b1", "task", ok, {"started_at": T, "attempts": [
               {"status": "succeeded", "usage": _usage(True, "3", None, 1, tool_calls=0.0)}]}),
           ("b2", "task", ok, {"started_at": T, "attempts": [
               {"status": ["odd"], "x-rein-usage-source": {"odd": 1}, "usage": {}}]}),
           # several attempts: taken apart by json_each, not read in the record
           ("b3", "loop", NodeStatus.FAILED, {"started_at": "", "attempts": [
               {"status": "failed", "x-rein-driver-token": 7, "usage": _usage(1, 1, 2, 0.5)},
               {"status": "failed", "usage": _usage(False, 1, 2, "0.5", tool_calls=1)},
               {"status": "failed", "usage": _usage(False, 1, 2, "0.5", tool_calls=2)}]})]
    _store_run(any_store, "g", alike + odd)
    facts = list(any_store.attempt_facts(RunId("g")))
    whole = list(grouped(f for row in any_store.iter_nodes(RunId("g")) for f in facts_of(row)))
    assert sorted(facts, key=repr) == sorted(whole, key=repr)
    [many] = [f for f in facts if f.count > 2]
    assert (many.count, many.usage) == (40, {
        "input_tokens": 80, "output_tokens": 120, "total_tokens": 200, "cost_usd": 10.0,
        "tool_calls": 39, "node_executions": None})
    [later] = [f for f in facts if f.type == "loop" and f.attempt == 1]
    assert (later.count, later.started, later.usage) == (2, False, {
        "input_tokens": None, "output_tokens": 2, "total_tokens": 4, "cost_usd": None,
        "tool_calls": 3, "node_executions": None})
    assert [f.driver_token for f in facts if f.type == "loop" and f.attempt == 0] == ["7"]
    assert len(facts) == 5
