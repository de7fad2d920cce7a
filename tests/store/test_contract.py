"""What every store guarantees (SQLite and PostgreSQL run the same tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus
from rein.errors import Refused, StoreError
from rein.store.base import ApprovalRow, NodeRow, ProcessRow, RunRow, Transition, WorkspaceRef
from rein.store.sqlite import SCHEMA_VERSION

# The event an answer is written with: the caller names it (the engine: approvals).
ANSWERED: dict[str, Any] = {"event_type": "approval/answered",
                            "payload": {"status": "answered"}}

T = "2026-01-01T00:00:00Z"


def _run(run_id: str, parent: str | None = None) -> RunRow:
    return RunRow(run_id=RunId(run_id), graph_id="g", graph_path="g.agraph.yaml",
                  graph_digest="sha256-x=", status=RunStatus.RUNNING, started_at=T,
                  parent_run_id=None if parent is None else RunId(parent),
                  binding={"params": {"é": [1, 2.5, None]}})


def _node(status: NodeStatus, **record: Any) -> NodeRow:
    return NodeRow(run_id=RunId("r1"), node_key=NodeKey("a"), node_id="a", scope_path="",
                   type="task", status=status, record={"node_id": "a", **record})


def test_a_new_store_is_at_the_current_schema(any_store: Any) -> None:
    assert any_store.schema_version() == SCHEMA_VERSION


def test_events_are_dense_and_written_with_their_state(any_store: Any) -> None:
    first = any_store.create_run(_run("r1"), event_type="run/started", payload={"n": 1})
    assert first.seq == 1
    any_store.transition(RunId("r1"), "node/started", {"node": "a"}, T,
                         Transition(node=_node(NodeStatus.RUNNING)))
    any_store.transition(RunId("r1"), "node/finished", {"node": "a"}, T,
                         Transition(node=_node(NodeStatus.SUCCEEDED, outputs={"x": "ü"})))
    [row] = any_store.nodes(RunId("r1"))
    # a node row's seq is that of the event it was first written with (node/started)
    assert row.status is NodeStatus.SUCCEEDED and row.seq == 2
    assert row.record["outputs"] == {"x": "ü"}
    assert [e.seq for e in any_store.events(RunId("r1"))] == [1, 2, 3]
    assert [e.type for e in any_store.events(RunId("r1"), after=2)] == ["node/finished"]
    got = any_store.get_run("r1")
    assert got.binding == {"params": {"é": [1, 2.5, None]}}


def test_nodes_are_listed_in_the_order_they_first_appeared(any_store: Any) -> None:
    """A node row's seq is that of the event it was first written with: rows keep the order
    in which their nodes appeared, across transactions and within one, whatever rewrites
    them later (no statement reads the run's highest seq to number a row)."""
    any_store.create_run(_run("r1"), event_type="run/started", payload={})

    def step(key: str, status: NodeStatus) -> None:
        row = NodeRow(run_id=RunId("r1"), node_key=NodeKey(key), node_id=key, scope_path="",
                      type="task", status=status, record={"node_id": key})
        kind = "node/started" if status is NodeStatus.RUNNING else "node/finished"
        any_store.transition(RunId("r1"), kind, {"node": key}, T, Transition(node=row))

    step("b", NodeStatus.RUNNING)
    with any_store.batch():  # two new rows in one transaction, one of them written twice
        step("c", NodeStatus.RUNNING)
        step("a", NodeStatus.RUNNING)
        step("c", NodeStatus.SUCCEEDED)
    step("b", NodeStatus.SUCCEEDED)
    rows = any_store.nodes(RunId("r1"))
    started = {e.payload["node"]: e.seq for e in any_store.events(RunId("r1"))
               if e.type == "node/started"}
    assert [(r.node_key, r.status, r.seq) for r in rows] == [
        ("b", NodeStatus.SUCCEEDED, started["b"]), ("c", NodeStatus.SUCCEEDED, started["c"]),
        ("a", NodeStatus.RUNNING, started["a"])]
    assert [r.seq for r in rows] == [2, 3, 4]


def test_a_failed_transaction_leaves_neither_event_nor_state(any_store: Any) -> None:
    any_store.create_run(_run("r1"), event_type="run/started", payload={})
    with pytest.raises(RuntimeError), any_store.atomic():
        any_store.transition(RunId("r1"), "node/started", {}, T,
                             Transition(node=_node(NodeStatus.RUNNING)))
        any_store.transition(RunId("r1"), "run/finished", {}, T,
                             Transition(run_status=RunStatus.FAILED, finished_at=T))
        raise RuntimeError("crash between the two")
    assert [e.type for e in any_store.events(RunId("r1"))] == ["run/started"]
    assert any_store.nodes(RunId("r1")) == []
    assert any_store.get_run("r1").status is RunStatus.RUNNING


def test_runs_newest_first_children_apart(any_store: Any) -> None:
    any_store.create_run(_run("r1"), event_type="run/started", payload={})
    any_store.create_run(_run("r2"), event_type="run/started", payload={})
    any_store.create_run(_run("c1", parent="r1"), event_type="run/started", payload={})
    assert [r.run_id for r in any_store.list_runs()] == ["r2", "r1"]
    assert [r.run_id for r in any_store.list_runs(include_children=True)] == ["c1", "r2", "r1"]
    assert [r.run_id for r in any_store.child_runs(RunId("r1"))] == ["c1"]
    assert any_store.get_run("nope") is None


def test_runs_keep_their_workspace_and_are_listed_by_it(any_store: Any) -> None:
    a = WorkspaceRef(id="ws-a", path="/srv/a", host="one")
    b = WorkspaceRef(id="ws-b", path="/srv/a", host="two")  # the same path, another machine
    for run_id, where in (("r1", a), ("r2", b), ("r3", None), ("r4", a)):
        any_store.create_run(_run(run_id).replace(workspace=where), event_type="run/started",
                             payload={})
    assert any_store.get_run("r2").workspace == b
    assert any_store.get_run("r3").workspace is None

    def listed(*ids: str | None) -> list[str]:
        return [r.run_id for r in any_store.list_runs(workspaces=list(ids))]

    assert listed("ws-a") == ["r4", "r1"]
    assert listed("ws-b", None) == ["r3", "r2"]
    assert listed() == [] and listed("ws-none") == []
    assert [r.run_id for r in any_store.list_runs()] == ["r4", "r3", "r2", "r1"]


def test_answers_are_idempotent_and_final(any_store: Any) -> None:
    any_store.create_run(_run("r1"), event_type="run/started", payload={})
    for i in (2, 1):
        ask = ApprovalRow(approval_id=ApprovalId(f"apv-{i}"), run_id=RunId("r1"),
                          key=f"gate:{i}", kind=ApprovalKind.GATE,
                          status=ApprovalStatus.PENDING, digest="sha256:d",
                          request={"prompt": "ok?"}, created_at=T)
        any_store.transition(RunId("r1"), "approval/requested", {}, T,
                             Transition(approval=ask))
    assert [a.approval_id for a in any_store.approvals()] == ["apv-2", "apv-1"]
    row, changed = any_store.answer_approval("apv-1", ApprovalStatus.ACCEPTED,
                                             {"actor": "ana"}, T, **ANSWERED)
    assert changed and row.answer == {"actor": "ana"}
    _, again = any_store.answer_approval(
        "apv-1", ApprovalStatus.ACCEPTED, {"actor": "bo"}, T, **ANSWERED)
    assert not again
    with pytest.raises(Refused, match="already answered"):
        any_store.answer_approval("apv-1", ApprovalStatus.DECLINED, {}, T, **ANSWERED)
    with pytest.raises(StoreError):
        any_store.answer_approval("apv-9", ApprovalStatus.DECLINED, {}, T, **ANSWERED)
    assert [a.approval_id for a in any_store.approvals(status=ApprovalStatus.PENDING)] == [
        "apv-2"]
    assert [e.type for e in any_store.events(RunId("r1"))][-1] == "approval/answered"


def test_process_groups_are_recorded_until_forgotten(any_store: Any) -> None:
    row = ProcessRow(run_id=RunId("r1"), pgid=4242, ident="77", host="h", owner_pid=1,
                     started_at=T)
    any_store.record_process(row)
    assert any_store.processes("r1") == [row]
    any_store.forget_process("r1", 4242)
    assert any_store.processes("r1") == []


def test_the_run_lock_excludes_other_processes_and_dies_with_them(
        any_store: Any, store_url: str, tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         ("import sys; from pathlib import Path; from rein.store.open import open_store; "
          f"s = open_store(Path({str(tmp_path)!r}), url={store_url!r}); "
          "held = s.lock_run('run-x'); held.__enter__(); print('held', flush=True); "
          "sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(Refused) as refused, any_store.lock_run("run-x"):
            pass
        assert refused.value.code == "RUN_LOCKED"
        with any_store.lock_run("run-y"):  # other runs are free
            pass
        holder.kill()
        holder.wait()
        _until_free(any_store, "run-x")
    finally:
        if holder.poll() is None:
            holder.kill()


def _until_free(store: Any, run_id: str) -> None:
    # A server notices a dead client when its socket closes, a moment after the kill.
    import time

    deadline = time.monotonic() + 10
    while True:
        try:
            with store.lock_run(run_id):
                return
        except Refused:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _row(key: str, type_: str, status: NodeStatus, **record: Any) -> NodeRow:
    return NodeRow(run_id=RunId("r1"), node_key=NodeKey(key), node_id=key, scope_path="",
                   type=type_, status=status, record={"node_id": key, **record})


def test_a_run_s_nodes_are_counted_streamed_and_their_attempts_summed_up(
        any_store: Any) -> None:
    from rein.store.rows import NodeFacts
    from rein.store.sql.runs import facts_of, grouped

    any_store.create_run(_run("r1"), event_type="run/started", payload={})
    rows = [
        _row("a", "task", NodeStatus.SUCCEEDED, started_at=T, attempts=[
            {"attempt": 1, "status": "failed", "usage": {"input_tokens": 3}},
            {"attempt": 2, "status": "succeeded", "x-rein-driver-token": "tok",
             "x-rein-usage-source": "self-reported", "usage": "not an object"}]),
        _row("b", "gate", NodeStatus.FAILED, started_at=T),
        _row("c", "task", NodeStatus.SKIPPED),
        _row("d", "task", NodeStatus.SUCCEEDED, attempts=[{"attempt": 1, "status": None}]),
    ]
    for row in rows:
        any_store.transition(RunId("r1"), "node/finished", {"node": row.node_key}, T,
                             Transition(node=row))
    assert any_store.node_counts(RunId("r1")) == {
        ("task", NodeStatus.SUCCEEDED): 2, ("gate", NodeStatus.FAILED): 1,
        ("task", NodeStatus.SKIPPED): 1}
    every = list(any_store.iter_nodes(RunId("r1")))
    assert every == any_store.nodes(RunId("r1"))
    some = any_store.iter_nodes(RunId("r1"), exclude=[NodeStatus.SUCCEEDED], records=False)
    assert [(r.node_key, r.status, dict(r.record)) for r in some] == [
        ("b", NodeStatus.FAILED, {}), ("c", NodeStatus.SKIPPED, {})]
    # The rows without a driver's attempt are summed up by the database from their columns;
    # the row with one ("a") is read from its record, attempt by attempt.
    facts = list(any_store.usage_facts(RunId("r1")))
    summed = sorted((f for f in facts if isinstance(f, NodeFacts)), key=_order)
    assert [(f.type, f.status, f.started, f.count, f.attempts, f.rerun, f.usage)
            for f in summed] == [
        ("gate", NodeStatus.FAILED, True, 1, 0, 0, None),
        ("task", NodeStatus.SKIPPED, False, 1, 0, 0, None),
        ("task", NodeStatus.SUCCEEDED, False, 1, 1, 1, None)]
    read = sorted((f for f in facts if not isinstance(f, NodeFacts)), key=_order)
    assert read == sorted(grouped(facts_of(every[0])), key=_order)
    assert [(f.type, f.attempt, f.attempt_status, f.usage and f.usage["input_tokens"],
             f.driver_token, f.usage_source, f.started, f.count) for f in read] == [
        ("task", 0, "failed", 3, None, None, True, 1),
        ("task", 1, "succeeded", None, "tok", "self-reported", True, 1)]


def _order(f: Any) -> tuple[str, ...]:
    """Facts in an order of their own: a backend groups them in any order."""
    return (f.type, f.status.value, repr(getattr(f, "attempt", None)),
            repr(getattr(f, "attempt_status", None)), repr(getattr(f, "driver_token", None)))
