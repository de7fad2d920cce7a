"""The approval queue read for some runs: chosen by the database, in the queue's order."""

from __future__ import annotations

from typing import Any

from rein.core.ids import ApprovalId, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, RunStatus
from rein.store.base import ApprovalRow, RunRow, Transition

T = "2026-01-01T00:00:00Z"


def _ask(store: Any, run_id: str, n: int, status: ApprovalStatus) -> None:
    store.transition(RunId(run_id), "approval/requested", {}, T, Transition(
        approval=ApprovalRow(approval_id=ApprovalId(f"apv-{run_id}-{n}"), run_id=RunId(run_id),
                             key=f"gate:{n}", kind=ApprovalKind.GATE, status=status,
                             digest="sha256:x", request={}, created_at=T)))


def test_the_queue_of_some_runs_keeps_its_order(any_store: Any) -> None:
    """Entries of 600 runs (more than one query's worth of run ids), asked in turn: those
    of the runs named come back in the order they were asked, and only those."""
    runs = [f"r{i:03}" for i in range(600)]
    with any_store.batch():
        for run_id in runs:
            any_store.create_run(RunRow(run_id=RunId(run_id), graph_id="g", graph_path="g",
                                        graph_digest="sha256-x=", status=RunStatus.RUNNING,
                                        started_at=T), event_type="run/started", payload={})
    with any_store.batch():
        for n in range(2):
            for run_id in reversed(runs):  # asked in an order that is not the ids'
                _ask(any_store, run_id, n, ApprovalStatus.PENDING if n else
                     ApprovalStatus.ACCEPTED)
    named = runs[::2]
    want = [f"apv-{r}-{n}" for n in range(2) for r in reversed(runs) if r in set(named)]
    got = any_store.approvals(run_ids=named)
    assert [a.approval_id for a in got] == want
    pending = any_store.approvals(run_ids=named, status=ApprovalStatus.PENDING)
    assert [a.approval_id for a in pending] == want[len(named):]
    assert [a.approval_id for a in any_store.approvals(run_ids=["r001", "r001"])] == [
        "apv-r001-0", "apv-r001-1"]
    assert any_store.approvals(run_ids=[]) == []
