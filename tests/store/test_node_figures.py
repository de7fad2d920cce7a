"""The usage figures kept in columns of each node row (schema version 7): written with the
row, filled from the records of rows stored before, and read back as the records say.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from rein.core.ids import NodeKey, RunId
from rein.core.states import NodeStatus, RunStatus
from rein.engine.run.record import usage_of, usage_with_sources
from rein.store.base import NodeRow, RunRow, Transition
from rein.store.rows import NodeFacts
from rein.store.sql.runs import COLUMNS, FILL_PAGE, figures_of, fill_node_figures
from rein.store.sqlite import SQLiteStore

FIXTURES = Path(__file__).parent / "fixtures"
T = "2026-01-01T00:00:00Z"


def _record(i: int) -> dict[str, Any]:
    """A node's record of one to three attempts, some failed, with or without usage, a
    figure a float or not a number now and then."""
    attempts = []
    for a in range(1 + i % 3):
        attempt: dict[str, Any] = {"attempt": a + 1,
                                   "status": "succeeded" if a == i % 3 else "failed"}
        if i % 5:
            attempt["usage"] = {"input_tokens": i, "output_tokens": 2,
                                "total_tokens": i + 2 if i % 7 else "?",
                                "cost_usd": 0.001 * i, "tool_calls": 1 if i % 2 else 0.5}
        attempts.append(attempt)
    return {"node_id": f"n{i}", "started_at": T if i % 4 else "", "attempts": attempts}


def _status(i: int) -> str:
    return "failed" if i % 9 == 0 else "succeeded"


def _rows(store: Any, run_id: str) -> list[tuple[Any, ...]]:
    """Every row's key and columns, in key order."""
    return [tuple(r) for r in store._x(
        f"SELECT node_key, {', '.join(COLUMNS)} FROM nodes WHERE run_id = ?"
        " ORDER BY node_key", (run_id,)).fetchall()]


def test_rows_of_a_version_6_store_are_filled_from_their_records(tmp_path: Path) -> None:
    """Opening a store of version 6 fills the columns of every row it holds from the
    row's record, more rows than one page of the fill, and what the run's usage then sums
    from the columns is what its records say."""
    copy = tmp_path / "rein.db"
    shutil.copy(FIXTURES / "v6.db", copy)
    old = sqlite3.connect(copy)
    n = FILL_PAGE * 2 + 7
    with old:
        old.execute("INSERT INTO runs (run_id, graph_id, graph_path, graph_digest, status,"
                    " started_at, binding, summary, created) VALUES ('run-old', 'g',"
                    " 'g.agraph.yaml', 'sha256-x=', 'failed', ?, '{}', '{}', 99)", (T,))
        old.executemany("INSERT INTO nodes (run_id, node_key, node_id, scope_path, type,"
                        " status, seq, record) VALUES ('run-old', ?, ?, '', ?, ?, ?, ?)",
                        [(f"n{i:05}", f"n{i}", "task" if i % 6 else "loop", _status(i), i,
                          json.dumps(_record(i))) for i in range(n)])
    old.close()
    store = SQLiteStore(copy)
    try:
        rows = _rows(store, "run-old")
        assert len(rows) == n
        assert rows == [(f"n{i:05}", *figures_of(_record(i), _status(i))) for i in sorted(
            range(n), key=lambda i: f"n{i:05}")]
        # The fixture's own row too.
        [(_, *figures)] = _rows(store, "run-fixture-1")
        assert figures[0] == 1 and figures[3] == 10.0  # one attempt, 10 input tokens
        facts = list(store.usage_facts(RunId("run-old")))
        assert all(isinstance(f, NodeFacts) for f in facts)
        assert sum(f.count for f in facts) == n
        want_tokens = sum(i * (1 + i % 3) for i in range(n) if i % 5)
        got = usage_with_sources(store, "run-old")
        assert got["input_tokens"] == want_tokens
        assert got["total_tokens"] is None  # "?" in some attempts: unknown
        assert got["node_executions"] == sum(1 + i % 3 for i in range(n) if i % 6) + sum(
            1 for i in range(n) if i % 6 == 0 and i % 4)
        assert got["sources"] == ["measured"]
    finally:
        store.close()


def test_the_fill_gives_each_row_what_its_write_gave_it(any_store: Any) -> None:
    """On every backend: the columns of rows written by this rein, emptied (as a row
    written before the upgrade has them), and filled again by the migration's step, are
    what the write put there; the totals read the records meanwhile, and agree."""
    any_store.create_run(RunRow(run_id=RunId("r"), graph_id="g", graph_path="g.agraph.yaml",
                                graph_digest="sha256-x=", status=RunStatus.RUNNING,
                                started_at=T), event_type="run/started", payload={})
    with any_store.batch():
        for i in range(40):
            any_store.transition(RunId("r"), "node/finished", {}, T, Transition(
                node=NodeRow(run_id=RunId("r"), node_key=NodeKey(f"n{i:03}"),
                             node_id=f"n{i}", scope_path="", type="task",
                             status=NodeStatus.SUCCEEDED, record=_record(i))))
    # And a run whose rows come first and fill a statement of the fill without a figure.
    any_store.create_run(RunRow(run_id=RunId("a"), graph_id="g", graph_path="g.agraph.yaml",
                                graph_digest="sha256-x=", status=RunStatus.RUNNING,
                                started_at=T), event_type="run/started", payload={})
    with any_store.batch():
        for i in range(120):
            any_store.transition(RunId("a"), "node/started", {}, T, Transition(
                node=NodeRow(run_id=RunId("a"), node_key=NodeKey(f"n{i:03}"),
                             node_id=f"n{i}", scope_path="", type="gate",
                             status=NodeStatus.RUNNING, record={"started_at": T})))
    written = _rows(any_store, "r")
    assert written == [(f"n{i:03}", *figures_of(_record(i), "succeeded")) for i in range(40)]
    gates = _rows(any_store, "a")
    assert {row[1:] for row in gates} == {(0, 0, 1, *[None] * 6, "running")}
    totals = usage_of(any_store, "r", settled_only=True)
    any_store._x(f"UPDATE nodes SET {', '.join(f'{c} = NULL' for c in COLUMNS)}")
    assert not [f for f in any_store.usage_facts(RunId("r")) if isinstance(f, NodeFacts)]
    assert usage_of(any_store, "r", settled_only=True) == totals
    with any_store.atomic():
        fill_node_figures(any_store._x)
    assert _rows(any_store, "r") == written
    assert _rows(any_store, "a") == gates
    assert usage_of(any_store, "r", settled_only=True) == totals


def test_a_record_that_is_not_an_object_is_left_to_be_read(tmp_path: Path) -> None:
    """The fill leaves a row whose record it cannot take apart as it was: its columns stay
    empty, and the totals read its record, as they always did."""
    store = SQLiteStore(tmp_path / "rein.db")
    try:
        store.create_run(RunRow(run_id=RunId("r"), graph_id="g", graph_path="g",
                                graph_digest="sha256-x=", status=RunStatus.RUNNING,
                                started_at=T), event_type="run/started", payload={})
        for key, record in (("a", "[1]"), ("b", "not JSON"), ("c", json.dumps(_record(1)))):
            store._x("INSERT INTO nodes (run_id, node_key, node_id, scope_path, type, status,"
                     " seq, record) VALUES ('r', ?, ?, '', 'task', 'succeeded', 0, ?)",
                     (key, key, record))
        with store.atomic():
            fill_node_figures(store._x)
        assert [r[3] for r in _rows(store, "r")] == [
            None, None, figures_of(_record(1), "succeeded")[2]]
    finally:
        store.close()


# How a rein of schema version 6 writes a node row: the columns of version 7 untouched.
OLDER_WRITE = ("INSERT INTO nodes (run_id, node_key, node_id, scope_path, type, status, seq,"
               " record) VALUES ('r', ?, ?, '', 'task', ?, 1, ?) ON CONFLICT (run_id,"
               " node_key) DO UPDATE SET status = excluded.status, record = excluded.record")


def test_a_row_an_older_rein_rewrites_is_read_from_its_record(any_store: Any) -> None:
    """A rein older than version 7 that was running when the store was upgraded writes a
    row's status and record, not its figures: the row then no longer has the status its
    figures were written with, and the totals read its record. A new row it writes has
    none of the figures, and is read too."""
    any_store.create_run(RunRow(run_id=RunId("r"), graph_id="g", graph_path="g",
                                graph_digest="sha256-x=", status=RunStatus.RUNNING,
                                started_at=T), event_type="run/started", payload={})
    in_flight = {"node_id": "a", "started_at": T, "attempts": [{"attempt": 1}]}
    any_store.transition(RunId("r"), "node/started", {}, T, Transition(node=NodeRow(
        run_id=RunId("r"), node_key=NodeKey("a"), node_id="a", scope_path="", type="task",
        status=NodeStatus.RUNNING, record=in_flight)))
    assert usage_of(any_store, "r")["input_tokens"] == 0
    ended = {**in_flight, "attempts": [{"attempt": 1, "status": "succeeded", "usage": {
        "input_tokens": 7, "output_tokens": 1, "total_tokens": 8, "cost_usd": 0.5}}]}
    any_store._x(OLDER_WRITE, ("a", "a", "succeeded", json.dumps(ended)))
    any_store._x(OLDER_WRITE, ("b", "b", "succeeded", json.dumps(_record(1))))
    assert not [f for f in any_store.usage_facts(RunId("r")) if isinstance(f, NodeFacts)]
    assert usage_of(any_store, "r") == {
        "input_tokens": 7 + 2, "output_tokens": 1 + 4, "total_tokens": 8 + 6,
        "cost_usd": 0.502, "tool_calls": 2, "node_executions": 3}
