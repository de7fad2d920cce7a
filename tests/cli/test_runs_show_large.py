"""`rein runs show` of a large run: a summary whose cost does not grow with the run.

Counted, not timed: the node rows the command builds (each one a record parsed) stay the
same whether the run has 300 nodes or 900, and its usage is summed without building any.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.cli import main
from rein.core.ids import NodeKey, RunId
from rein.core.states import NodeStatus, RunStatus
from rein.store.base import NodeRow, RunRow, Transition
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


def _shown(workspace: Path, run_id: str, monkeypatch: pytest.MonkeyPatch,
           capsys: Any) -> tuple[str, int]:
    """The text of `rein runs show RUN`, and how many node rows the store built for it."""
    built = 0
    real = sql_runs.NodeRow

    def counting(**fields: Any) -> NodeRow:
        nonlocal built
        built += 1
        return real(**fields)

    with monkeypatch.context() as patch:
        patch.setattr(sql_runs, "NodeRow", counting)
        patch.chdir(workspace)
        capsys.readouterr()
        assert main(["runs", "show", run_id]) == 0
    return capsys.readouterr().out, built


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
