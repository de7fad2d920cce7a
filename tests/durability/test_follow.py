"""``rein runs events --follow`` streams a run another process advances, to its end."""

from __future__ import annotations

import json
from pathlib import Path

from tests.durability import graphs
from tests.durability.support import rein, runs, start, write_graph


def test_follow_streams_until_the_run_ends_then_summarizes(tmp_path: Path) -> None:
    graph, answers = graphs.gated()
    digest = write_graph(tmp_path, graph, answers)
    assert rein(tmp_path, "run", "g.agraph.yaml", "--approve", digest).returncode == 3
    [row] = runs(tmp_path)
    follower = start(tmp_path, "runs", "events", row["run_id"], "--follow", "--json",
                     "--interval", "0.05", "--timeout", "60")
    [ask] = json.loads(rein(tmp_path, "approvals", "list", "--json").stdout)["approvals"]
    assert rein(tmp_path, "approvals", "accept", ask["approval_id"]).returncode == 0
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    *events, summary = lines
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "run/finished"
    assert "approval/answered" in [e["type"] for e in events]
    assert summary == {"run_id": row["run_id"], "status": "succeeded",
                       "digest": digest, "events": len(events)}


def test_follow_gives_up_at_its_timeout_while_the_run_waits(tmp_path: Path) -> None:
    graph, answers = graphs.gated()
    digest = write_graph(tmp_path, graph, answers)
    assert rein(tmp_path, "run", "g.agraph.yaml", "--approve", digest).returncode == 3
    [row] = runs(tmp_path)
    done = rein(tmp_path, "runs", "events", row["run_id"], "--follow", "--json",
                "--timeout", "0", "--after", "2")
    assert done.returncode == 3
    *events, summary = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["seq"] == 3 and summary["status"] == "awaiting_human"
    assert summary["events"] == len(events)
