"""A coordinator (``rein run``) SIGKILLed mid-run is resumed by another process: completed
attempts are adopted, in-flight ones attach to the workflow already queued, and no attempt
workflow runs twice."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.executors.cluster import Cluster

pytestmark = pytest.mark.timeout(900)


def finished_attempts(c: Cluster) -> int:
    rows = c.query("SELECT count(*) FROM dbos.workflow_status WHERE name = 'rein_attempt' "
                   "AND status = 'SUCCESS'")
    return int(rows[0][0])


def test_a_killed_coordinator_is_resumed_from_another_process(tmp_path: Path,
                                                              db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url)
    try:
        c.worker("w1")
        c.workers_ready("w1")
        path, digest = c.graph()
        coordinator = c.rein("run", path, "--approve", digest, "--json", wait=False,
                             log="coordinator.log")
        c.wait_for("ten finished attempts", lambda: finished_attempts(c) >= 10)
        coordinator.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        coordinator.wait()  # type: ignore[union-attr]
        listed = c.rein("runs", "list", "--json", executor=False)
        assert isinstance(listed, subprocess.CompletedProcess) and listed.returncode == 0
        runs = json.loads(listed.stdout)
        run_id = (runs["runs"] if isinstance(runs, dict) else runs)[0]["run_id"]
        done = c.rein("resume", run_id, "--json")
        assert isinstance(done, subprocess.CompletedProcess)
        assert done.returncode == 0, done.stdout + done.stderr + c.logs()
        nodes = c.node_rows(run_id)
        workflows = c.query("SELECT workflow_uuid, status "
                            "FROM dbos.workflow_status WHERE name = 'rein_attempt'")
    finally:
        c.stop()
    items = {k: v for k, v in nodes.items() if k.endswith("].w")}
    assert len(items) == 40 and all(v["status"] == "succeeded" for v in items.values())
    # One workflow per item, each run once: the resumed coordinator enqueued nothing twice.
    assert sorted(w[0] for w in workflows) == sorted(f"{run_id}/{k}#1" for k in items)
    assert all(w[1] == "SUCCESS" for w in workflows)
    assert all(v["attempts"][0]["x-rein-placement"]["rerun"] is False for v in items.values())
