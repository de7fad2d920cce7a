"""A run's usage totals, summed from the facts each store groups for them.

The store keeps the figures the totals read in columns of each node row, written with the
row, and sums them in the database (:class:`rein.store.rows.NodeFacts`); the rows with a
driver's attempt, and rows written without the columns, are read from their records
(:class:`rein.store.rows.AttemptFacts`). What the totals say is what every attempt's record
says: these runs mix every case the totals tell apart, and each total is checked against
the same totals read from every record (:class:`_FromRecords`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rein.core.ids import NodeKey, RunId
from rein.core.states import NodeStatus, RunStatus
from rein.engine.run.record import usage_of, usage_sources, usage_with_sources
from rein.store.base import NodeRow, RunRow, Transition
from rein.store.rows import AttemptFacts, NodeFacts
from rein.store.sql.runs import COLUMNS, facts_of, grouped

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


def test_alike_nodes_come_back_as_one_whatever_their_number(any_store: Any) -> None:
    ok = NodeStatus.SUCCEEDED
    alike = [(f"a{i}", "task", ok, {"started_at": T, "attempts": [
        {"status": "succeeded", "usage": _usage(2, 3, 5, 0.25, tool_calls=i % 3)}]})
        for i in range(40)]
    odd = [("b1", "task", ok, {"started_at": T, "attempts": [
               {"status": "succeeded", "usage": _usage(True, "3", None, 1, tool_calls=0.0)}]}),
           ("b2", "task", ok, {"started_at": T, "attempts": [
               {"status": ["odd"], "x-rein-usage-source": {"odd": 1}, "usage": {}}]}),
           # a driver's attempt among others: the row is read from its record
           ("b3", "loop", NodeStatus.FAILED, {"started_at": "", "attempts": [
               {"status": "failed", "x-rein-driver-token": 7, "usage": _usage(1, 1, 2, 0.5)},
               {"status": "failed", "usage": _usage(False, 1, 2, "0.5", tool_calls=1)},
               {"status": "failed", "usage": _usage(False, 1, 2, "0.5", tool_calls=2)}]}),
           ("b4", "loop", NodeStatus.FAILED, {"started_at": T, "attempts": [
               {"status": "failed", "usage": _usage(1, 1, 2, 0.5)},
               {"status": "succeeded", "usage": _usage(2, 1.5, 3, 0.25, tool_calls=2)}]})]
    _store_run(any_store, "g", alike + odd)
    facts = list(any_store.usage_facts(RunId("g")))
    summed = [f for f in facts if isinstance(f, NodeFacts)]
    [many] = [f for f in summed if f.count > 1]
    assert (many.count, many.attempts, many.rerun, many.usage) == (40, 40, 40, {
        "input_tokens": 80, "output_tokens": 120, "total_tokens": 200, "cost_usd": 10.0,
        "tool_calls": 39, "node_executions": 0})
    # A figure keeps the type the records gave it: 3 stays 3, and 1.5 makes a float.
    assert [type(v) for v in many.usage.values()] == [int, int, int, float, int, int]
    [b4] = [f for f in summed if f.type == "loop"]
    assert (b4.attempts, b4.rerun, b4.usage) == (2, 1, {
        "input_tokens": 3, "output_tokens": 2.5, "total_tokens": 5, "cost_usd": 0.75,
        "tool_calls": 2, "node_executions": 0})
    # What is not a number is unknown where a worker measures it, left out elsewhere.
    [b1, b2] = sorted((f for f in summed if f.usage and f.usage["input_tokens"] is None),
                      key=lambda f: f.usage["cost_usd"] is None)
    assert b1.usage == {"input_tokens": None, "output_tokens": None, "total_tokens": None,
                        "cost_usd": 1, "tool_calls": 0.0, "node_executions": 0}
    assert b2.usage == {"input_tokens": None, "output_tokens": None, "total_tokens": None,
                        "cost_usd": None, "tool_calls": 0, "node_executions": 0}
    assert len(summed) == 4  # the 40, b1, b2 (a usage of no figures), b4
    read = [f for f in facts if isinstance(f, AttemptFacts)]
    [b3] = [r for r in any_store.nodes(RunId("g")) if r.node_key == "b3"]
    assert sorted(read, key=repr) == sorted(grouped(facts_of(b3)), key=repr)
    _agree_with_records(any_store, "g")


class _FromRecords:
    """The store, its usage facts read from every record of the run: what the totals said
    before the figures were kept in columns, the reference the columns must agree with."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def usage_facts(self, run_id: RunId) -> Iterator[AttemptFacts]:
        return grouped(f for row in self.store.iter_nodes(run_id) for f in facts_of(row))


def _agree_with_records(store: Any, run_id: str) -> dict[str, Any]:
    """The totals of every kind, checked against those read from every record."""
    got = {}
    for children in (False, True):
        for settled in (False, True):
            got[children, settled] = usage_of(store, run_id, include_children=children,
                                              settled_only=settled)
            assert got[children, settled] == usage_of(
                _FromRecords(store), run_id, include_children=children,
                settled_only=settled), (children, settled)
    with_sources = usage_with_sources(store, run_id)
    assert with_sources == usage_with_sources(_FromRecords(store), run_id)
    return with_sources


def test_the_family_s_totals_are_those_of_its_records(any_store: Any) -> None:
    _family(any_store)
    _agree_with_records(any_store, "p")
    _agree_with_records(any_store, "c")


def _unreadable(store: Any, where: str) -> int:
    """Overwrite the records of a run's rows ``where`` says with text that is not JSON:
    a read that parses one of them fails. The number of rows overwritten."""
    rows = store._x(f"SELECT node_key FROM nodes WHERE {where}").fetchall()
    store._x(f"UPDATE nodes SET record = 'not JSON' WHERE {where}")
    return len(rows)


def test_the_totals_parse_no_record_but_those_of_a_driver_s_attempts(any_store: Any) -> None:
    """Counted, not timed: the records of the rows the columns stand for are made
    unreadable, and the totals are the same (before the columns, every record of the run
    was parsed to sum it: this failed)."""
    _family(any_store)
    want = _agree_with_records(any_store, "p")
    settled = usage_of(any_store, "p", include_children=True, settled_only=True)
    assert _unreadable(any_store, "(facts & 4) = 0") == 6
    assert usage_with_sources(any_store, "p") == want
    assert usage_of(any_store, "p", include_children=True, settled_only=True) == settled


def test_rows_written_without_the_columns_are_read_from_their_records(
        any_store: Any) -> None:
    """A row whose columns are empty (written by a rein older than schema version 7 after
    the store was upgraded) is summed from its record: the totals do not change."""
    _family(any_store)
    want = _agree_with_records(any_store, "p")
    any_store._x(f"UPDATE nodes SET {', '.join(f'{c} = NULL' for c in COLUMNS)}"
                 " WHERE node_key IN ('n1', 'n2', 'n4')")
    facts = list(any_store.usage_facts(RunId("p")))
    assert sum(f.count for f in facts if isinstance(f, NodeFacts)) == 3  # n3, n5, n6
    assert _agree_with_records(any_store, "p") == want


@pytest.mark.parametrize("figure", [3, 3.0, 0.1])
def test_a_figure_is_summed_as_the_records_give_it(any_store: Any, figure: Any) -> None:
    ok = NodeStatus.SUCCEEDED
    _store_run(any_store, "f", [(f"k{i}", "task", ok, {"attempts": [
        {"status": "succeeded", "usage": _usage(figure, 1, 1, figure, tool_calls=figure)}]})
        for i in range(3)])
    got = _agree_with_records(any_store, "f")
    assert (got["input_tokens"], got["tool_calls"]) == (figure * 3, figure * 3)
    assert type(got["input_tokens"]) is type(figure)
    assert got["cost_usd"] == round(figure * 3, 6)
