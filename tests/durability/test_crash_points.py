"""Crash points the kill test reaches only by chance, made exact: the store is cut back to
what a process killed at that instant would have left, then the run is resumed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.durability import graphs
from tests.durability.support import normalized, record, rein, runs, write_graph


def _cut_after(workspace: Path, run_id: str, event_type: str, node: str) -> None:
    """Keep the events up to ``event_type`` of ``node``; drop what came later."""
    db = sqlite3.connect(workspace / ".rein" / "rein.db")
    with db:
        rows = db.execute("SELECT seq, type, payload FROM events WHERE run_id = ? ORDER BY seq",
                          (run_id,)).fetchall()
        [cut] = [seq for seq, kind, payload in rows
                 if kind == event_type and f'"node":"{node}"' in payload]
        db.execute("DELETE FROM events WHERE run_id = ? AND seq > ?", (run_id, cut))
        db.execute("DELETE FROM nodes WHERE run_id = ? AND node_key = 'd'", (run_id,))
        db.execute("UPDATE runs SET status = 'running', finished_at = NULL, summary = '{}'"
                   " WHERE run_id = ?", (run_id,))
    db.close()


def test_a_crash_between_a_node_end_and_its_edges_loses_no_edge(tmp_path: Path) -> None:
    graph, answers = graphs.chain()
    digest = write_graph(tmp_path, graph, answers)
    assert rein(tmp_path, "run", "g.agraph.yaml", "--approve", digest).returncode == 0
    [row] = runs(tmp_path)
    expected = record(tmp_path, row["run_id"])
    _cut_after(tmp_path, row["run_id"], "node/finished", "c")  # c→d not yet resolved
    done = rein(tmp_path, "resume", row["run_id"])
    assert done.returncode == 0, done.stderr
    got = record(tmp_path, row["run_id"])
    assert [e["to"] for e in got["edges_taken"]] == ["b", "c", "d"]
    assert normalized(got) == normalized(expected)
