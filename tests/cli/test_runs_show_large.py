"""`rein runs show` of a large run: a summary whose cost does not grow with the run.

Counted, not timed: the node rows the command builds (each one a record parsed) and the
rows it reads from the database at all stay the same whether the run has 300 nodes or 900:
its usage is summed, and its nodes counted, by the database, from columns of the node rows
(no record of a node it does not list is parsed), and the approvals it shows are the run's,
chosen by the database.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main
from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus
from rein.store.base import ApprovalRow, NodeRow, RunRow, Transition
from rein.store.sql import runs as sql_runs
from rein.store.sqlite import SQLiteStore

T = "2026-01-01T00:00:00Z"
FAILED = 3  # nodes that did not succeed, listed whatever the run's size


def _stored_run(workspace: Path, n: int) -> str:
    """A finished run of ``n`` task nodes, each with one attempt that spent 10 tokens;
    the first ``FAILED`` failed."""
    store = SQLiteStore.open(workspace)
    assert store is not None
    run_id = RunId(f"run-{n}")
    store.create_run(RunRow(run_id=run_id, graph_id="g", graph_path="g.agraph.yaml",
                            graph_digest="sha256-x=", status=RunStatus.RUNNING,
                            started_at=T), event_type="run/started", payload={})
    with store.batch():
        for i in range(n):
            status = NodeStatus.FAILED if i < FAILED else NodeStatus.SUCCEEDED
            record = {"node_id": f"n{i}", "started_at": T, "finished_at": T, "attempts": [
                {"attempt": 1, "status": status.value, "started_at": T, "finished_at": T,
                 "usage": {"input_tokens": 4, "output_tokens": 6, "total_tokens": 10,
                           "cost_usd": 0.0}}]}
            store.transition(run_id, "node/finished", {"node": f"n{i}"}, T, Transition(
                node=NodeRow(run_id=run_id, node_key=NodeKey(f"n{i}"), node_id=f"n{i}",
                             scope_path="", type="task", status=status, record=record)))
    store.transition(run_id, "run/finished", {"status": "failed"}, T,
                     Transition(run_status=RunStatus.FAILED, finished_at=T, summary={}))
    store.close()
    return str(run_id)


def _shown(workspace: Path, run_id: str, monkeypatch: pytest.MonkeyPatch, capsys: Any,
           *args: str) -> tuple[str, int]:
    """The text of `rein runs show RUN`, and how many node rows the store built for it."""
    out, built, _ = _counted(workspace, run_id, monkeypatch, capsys, *args)
    return out, built


def _counted(workspace: Path, run_id: str, monkeypatch: pytest.MonkeyPatch, capsys: Any,
             *args: str) -> tuple[str, int, int]:
    """The output of `rein runs show RUN ARGS`, the node rows the store built for it, and
    the rows it read from the database (every statement's, streamed or not)."""
    built = read = 0
    real = sql_runs.NodeRow
    execute, stream = SQLiteStore._execute, SQLiteStore._stream

    def counting(**fields: Any) -> NodeRow:
        nonlocal built
        built += 1
        return real(**fields)

    def executed(store: SQLiteStore, *a: Any) -> Any:
        nonlocal read
        rows = execute(store, *a)
        read += len(rows._rows)
        return rows

    def streamed(store: SQLiteStore, *a: Any) -> Iterator[Any]:
        nonlocal read
        for row in stream(store, *a):
            read += 1
            yield row

    with monkeypatch.context() as patch:
        patch.setattr(sql_runs, "NodeRow", counting)
        patch.setattr(SQLiteStore, "_execute", executed)
        patch.setattr(SQLiteStore, "_stream", streamed)
        patch.chdir(workspace)
        capsys.readouterr()
        assert main(["runs", "show", run_id, *args]) == 0
    return capsys.readouterr().out, built, read


@pytest.mark.parametrize("n", [300, 900])
def test_a_large_run_is_summed_up_with_the_nodes_that_did_not_succeed(
        n: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    run_id = _stored_run(tmp_path, n)
    out, built = _shown(tmp_path, run_id, monkeypatch, capsys)
    assert f"nodes    {n}: {n - FAILED} succeeded, {FAILED} failed\n" in out
    listed = [line for line in out.splitlines() if " n" in line and "(task)" in line]
    assert [line.split()[2] for line in listed] == ["n0", "n1", "n2"]
    # Usage summed over every attempt, still.
    assert f"{10 * n} tokens" in out.replace(",", ""), out
    # Only the listed nodes were built: the same number at 300 nodes as at 900.
    assert built == FAILED, built


def test_a_small_run_lists_every_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: Any) -> None:
    run_id = _stored_run(tmp_path, 20)
    out, _ = _shown(tmp_path, run_id, monkeypatch, capsys)
    assert "nodes\n" in out
    assert sum(1 for line in out.splitlines() if "(task)" in line) == 20


def test_the_rows_read_for_a_summary_do_not_grow_with_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """Its usage is summed by the database: the rows read are the same at 300 nodes as at
    900 (before, two rows of every attempt came back to be summed, twice)."""
    read = {}
    for n in (300, 900):
        run_id = _stored_run(tmp_path / str(n), n)
        out, _, read[n] = _counted(tmp_path / str(n), run_id, monkeypatch, capsys)
        assert f"{10 * n} tokens · {n} node executions" in out, out
    assert read[300] == read[900], read
    assert read[900] < 100, read


def test_the_summary_parses_no_record_of_the_nodes_it_does_not_list(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """Counted, not timed: every record of a node that is not listed (each one succeeded)
    is overwritten with text that is not JSON, and the command prints the same, byte for
    byte. Its usage is summed from the columns written with each node row (before, SQLite
    parsed every record of the run to sum its usage: this failed on the first)."""
    run_id = _stored_run(tmp_path, 300)
    before, _, _ = _counted(tmp_path, run_id, monkeypatch, capsys)
    db = sqlite3.connect(tmp_path / ".rein" / "rein.db")
    with db:
        overwritten = db.execute("UPDATE nodes SET record = 'not JSON' WHERE run_id = ?"
                                 " AND status = 'succeeded'", (run_id,)).rowcount
    db.close()
    assert overwritten == 300 - FAILED
    after, built, read = _counted(tmp_path, run_id, monkeypatch, capsys)
    assert after == before
    assert f"{10 * 300} tokens · 300 node executions" in after, after
    assert built == FAILED and read < 100, (built, read)


def test_the_approvals_of_other_runs_are_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """The approvals shown are chosen by the store: a queue of 400 entries of another run
    adds no row to what the command reads (before, it read the whole queue and kept the
    run's own entries in Python)."""
    run_id = _stored_run(tmp_path, 300)
    alone, _, read_alone = _counted(tmp_path, run_id, monkeypatch, capsys)
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    other = RunId("run-other")
    store.create_run(RunRow(run_id=other, graph_id="g", graph_path="g.agraph.yaml",
                            graph_digest="sha256-x=", status=RunStatus.RUNNING,
                            started_at=T), event_type="run/started", payload={})
    with store.batch():
        for i in range(400):
            store.transition(other, "approval/requested", {}, T, Transition(
                approval=ApprovalRow(approval_id=ApprovalId(f"apv-{i}"), run_id=other,
                                     key=f"gate:{i}", kind=ApprovalKind.GATE,
                                     status=ApprovalStatus.PENDING, digest="sha256:x",
                                     request={"prompt": "Go?"}, created_at=T)))
    store.close()
    beside, _, read_beside = _counted(tmp_path, run_id, monkeypatch, capsys)
    assert beside == alone
    assert read_beside == read_alone, (read_alone, read_beside)
