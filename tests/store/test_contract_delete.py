"""What every store guarantees when runs are removed (``rein runs prune``): the runs named
and every row stored for them go in one transaction, and nothing of another run is touched.
SQLite and PostgreSQL run the same tests (see ``conftest.py``)."""

from __future__ import annotations

from typing import Any

from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus, TurnStatus
from rein.store.base import ApprovalRow, DriverTurn, NodeRow, ProcessRow, RunRow, Transition

T = "2026-01-01T00:00:00Z"


def _fill(store: Any, run_id: str, parent: str | None = None) -> None:
    rid = RunId(run_id)
    store.create_run(RunRow(run_id=rid, graph_id="g", graph_path="g.agraph.yaml",
                            graph_digest="sha256-x=", status=RunStatus.RUNNING, started_at=T,
                            parent_run_id=RunId(parent) if parent else None),
                     event_type="run/started", payload={})
    node = NodeRow(run_id=rid, node_key=NodeKey("a"), node_id="a", scope_path="", type="task",
                   status=NodeStatus.RUNNING)
    store.transition(rid, "node/started", {"node": "a"}, T, Transition(node=node))
    ask = ApprovalRow(approval_id=ApprovalId(f"apv-{run_id}"), run_id=rid, key="gate:a",
                      kind=ApprovalKind.GATE, status=ApprovalStatus.PENDING,
                      digest="sha256:d", request={}, created_at=T)
    store.transition(rid, "approval/requested", {}, T, Transition(approval=ask))
    store.add_driver_turn(DriverTurn(token=f"tok-{run_id}", run_id=rid,
                                     root_run_id=RunId(parent or run_id), node_key="a",
                                     attempt=1, kind="task", status=TurnStatus.PENDING,
                                     instruction={}, baseline={}, created_at=T),
                          event_type="driver/instructed", payload={})
    store.record_process(ProcessRow(run_id=rid, pgid=4242, ident="x", host="h", owner_pid=1,
                                    node_key="a", started_at=T))


def _rows(store: Any, run_id: str) -> list[int]:
    rid = RunId(run_id)
    return [store.get_run(run_id) is not None, len(store.events(rid)), len(store.nodes(rid)),
            len(store.approvals(run_id=rid)), store.driver_turn(f"tok-{run_id}") is not None,
            len(store.processes(run_id))]


def test_deleting_runs_removes_every_row_of_them_and_nothing_else(any_store: Any) -> None:
    _fill(any_store, "top")
    _fill(any_store, "child", parent="top")
    _fill(any_store, "other")
    before = _rows(any_store, "other")
    assert _rows(any_store, "top") == [True, 4, 1, 1, True, 1]
    assert any_store.delete_runs(["top", "child"]) == 2
    assert _rows(any_store, "top") == _rows(any_store, "child") == [False, 0, 0, 0, False, 0]
    assert _rows(any_store, "other") == before
    assert [r.run_id for r in any_store.list_runs(include_children=True)] == ["other"]
    assert any_store.delete_runs([]) == 0
    assert any_store.delete_runs(["nobody"]) == 0
