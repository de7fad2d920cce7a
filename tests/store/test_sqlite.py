"""The SQLite store: schema versions, one transaction per transition, idempotent answers."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus
from rein.errors import Refused, StoreError
from rein.store.base import ApprovalRow, NodeRow, RunRow, Transition
from rein.store.sqlite import SCHEMA_VERSION, SQLiteStore, db_path

# The event an answer is written with: the caller names it (the engine: approvals).
ANSWERED: dict[str, Any] = {"event_type": "approval/answered",
                            "payload": {"status": "answered"}}


def _run(run_id: str = "run-1", parent: str | None = None) -> RunRow:
    return RunRow(
        run_id=RunId(run_id),
        graph_id="g",
        graph_path="g.agraph.yaml",
        graph_digest="sha256-abc=",
        status=RunStatus.RUNNING,
        started_at="2026-01-01T00:00:00Z",
        parent_run_id=None if parent is None else RunId(parent),
        binding={"params": {"a": 1}},
    )


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    s = SQLiteStore.open(tmp_path)
    assert s is not None
    yield s
    s.close()


def test_open_without_create_writes_nothing(tmp_path: Path) -> None:
    assert SQLiteStore.open(tmp_path, create=False) is None
    assert not (tmp_path / ".rein").exists()


def test_new_store_is_at_current_schema_in_wal_mode(store: SQLiteStore, tmp_path: Path) -> None:
    assert store.schema_version() == SCHEMA_VERSION
    mode = store._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert db_path(tmp_path).exists()


def test_store_from_a_newer_rein_is_refused(tmp_path: Path) -> None:
    SQLiteStore.open(tmp_path).close()
    db = sqlite3.connect(db_path(tmp_path))
    db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer than this rein understands"):
        SQLiteStore.open(tmp_path)


def test_transition_writes_event_and_node_together(store: SQLiteStore) -> None:
    first = store.create_run(_run(), event_type="run/started", payload={"x": 1})
    assert first.seq == 1
    node = NodeRow(
        run_id=RunId("run-1"),
        node_key=NodeKey("a"),
        node_id="a",
        scope_path="",
        type="task",
        status=NodeStatus.RUNNING,
        record={"node_id": "a"},
    )
    ev = store.transition(
        RunId("run-1"), "node/started", {"node": "a"}, "2026-01-01T00:00:01Z",
        Transition(node=node),
    )
    assert ev.seq == 2
    done = NodeRow(**{**{f: getattr(node, f) for f in node.__slots__}, "status": NodeStatus.SUCCEEDED})
    store.transition(RunId("run-1"), "node/finished", {}, "t", Transition(node=done))
    [row] = store.nodes(RunId("run-1"))
    assert row.status is NodeStatus.SUCCEEDED and row.seq == ev.seq  # its first event's
    assert [e.type for e in store.events(RunId("run-1"))] == [
        "run/started", "node/started", "node/finished",
    ]
    assert [e.seq for e in store.events(RunId("run-1"), after=1)] == [2, 3]


def test_failed_transaction_leaves_neither_event_nor_state(store: SQLiteStore) -> None:
    store.create_run(_run(), event_type="run/started", payload={})
    bad = ApprovalRow(
        approval_id=ApprovalId("apv-1"),
        run_id=RunId("run-1"),
        key="k",
        kind=ApprovalKind.GATE,
        status=ApprovalStatus.PENDING,
        digest="d",
        request={},
        created_at="t",
    )
    store.transition(RunId("run-1"), "approval/requested", {}, "t", Transition(approval=bad))
    clash = ApprovalRow(**{**{f: getattr(bad, f) for f in bad.__slots__}, "approval_id": ApprovalId("apv-2")})
    with pytest.raises(StoreError) as info:  # same (run, key): unique
        store.transition(
            RunId("run-1"), "approval/requested", {}, "t",
            Transition(approval=clash, run_status=RunStatus.FAILED),
        )
    assert info.value.code == "STORE_CONFLICT"
    assert isinstance(info.value.__cause__, sqlite3.IntegrityError)
    assert len(store.events(RunId("run-1"))) == 2
    assert store.get_run("run-1").status is RunStatus.RUNNING


def test_runs_list_newest_first_and_children_hidden(store: SQLiteStore) -> None:
    store.create_run(_run("run-1"), event_type="run/started", payload={})
    store.create_run(_run("run-2", parent="run-1"), event_type="run/started", payload={})
    store.create_run(_run("run-3"), event_type="run/started", payload={})
    assert [r.run_id for r in store.list_runs()] == ["run-3", "run-1"]
    assert [r.run_id for r in store.list_runs(include_children=True)] == ["run-3", "run-2", "run-1"]
    assert [r.run_id for r in store.child_runs(RunId("run-1"))] == ["run-2"]
    assert store.get_run("run-2").binding == {"params": {"a": 1}}


def test_answers_are_idempotent_and_final(store: SQLiteStore) -> None:
    store.create_run(_run(), event_type="run/started", payload={})
    req = ApprovalRow(
        approval_id=ApprovalId("apv-1"),
        run_id=RunId("run-1"),
        key="gate:g",
        kind=ApprovalKind.GATE,
        status=ApprovalStatus.PENDING,
        digest="d",
        request={"prompt": "ok?"},
        created_at="t",
    )
    store.transition(RunId("run-1"), "approval/requested", {}, "t", Transition(approval=req))
    row, changed = store.answer_approval(
        "apv-1", ApprovalStatus.ACCEPTED, {"actor": "me"}, "t2", **ANSWERED)
    assert changed and row.status is ApprovalStatus.ACCEPTED
    row, changed = store.answer_approval(
        "apv-1", ApprovalStatus.ACCEPTED, {"actor": "me"}, "t3", **ANSWERED)
    assert not changed and row.answered_at == "t2"
    with pytest.raises(Refused, match="already answered: accepted"):
        store.answer_approval("apv-1", ApprovalStatus.DECLINED, {}, "t4", **ANSWERED)
    with pytest.raises(StoreError, match="no approval 'apv-9'"):
        store.answer_approval("apv-9", ApprovalStatus.DECLINED, {}, "t4", **ANSWERED)
    assert [a.approval_id for a in store.approvals(status=ApprovalStatus.ACCEPTED)] == ["apv-1"]
    assert store.approvals(status=ApprovalStatus.PENDING) == []


def test_two_connections_share_the_event_sequence(tmp_path: Path) -> None:
    a = SQLiteStore.open(tmp_path)
    b = SQLiteStore.open(tmp_path)
    a.create_run(_run(), event_type="run/started", payload={})
    b.transition(RunId("run-1"), "x", {}, "t")
    ev = a.transition(RunId("run-1"), "y", {}, "t")
    assert ev.seq == 3
    a.close()
    b.close()


def test_rows_an_older_rein_numbered_stay_before_the_new_ones(store: SQLiteStore) -> None:
    """An older rein numbered a run's node rows 1, 2, 3, ...; a row written now takes the
    seq of its first event, which is past every one of them (each older row was written
    with an event of its own), so a resumed run lists its nodes in the order they came."""
    store.create_run(_run(), event_type="run/started", payload={})
    for key in ("x", "y", "z"):
        store.transition(RunId("run-1"), "node/started", {"node": key}, "t", Transition(
            node=NodeRow(run_id=RunId("run-1"), node_key=NodeKey(key), node_id=key,
                         scope_path="", type="task", status=NodeStatus.RUNNING, record={})))
    with store.atomic():  # the numbering of the older rein: 1, 2, 3 in order of appearance
        store._x("UPDATE nodes SET seq = CASE node_key WHEN 'x' THEN 1 WHEN 'y' THEN 2"
                 " ELSE 3 END WHERE run_id = 'run-1'")
    for key in ("w", "y"):  # a new node, and an older one written again
        store.transition(RunId("run-1"), "node/finished", {"node": key}, "t", Transition(
            node=NodeRow(run_id=RunId("run-1"), node_key=NodeKey(key), node_id=key,
                         scope_path="", type="task", status=NodeStatus.SUCCEEDED, record={})))
    assert [(r.node_key, r.seq) for r in store.nodes(RunId("run-1"))] == [
        ("x", 1), ("y", 2), ("z", 3), ("w", 5)]
