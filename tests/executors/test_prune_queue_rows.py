"""``rein runs prune`` on a PostgreSQL store removes a finished run's scale-out rows (its
DBOS workflows and ``rein_attempt_runs`` rows) with the run, and nothing of a run that is
still going: counted on a real server, with real ``rein worker`` processes."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.executors.cluster import DEADLINE, Cluster
from tests.executors.test_two_workers import last_summary

pytestmark = pytest.mark.timeout(900)


def rows_of(c: Cluster, run_id: str) -> dict[str, int]:
    prefix = f"{run_id}/"
    counts = {}
    for table, column in (("dbos.workflow_status", "workflow_uuid"),
                          ("dbos.workflow_input", "workflow_uuid"),
                          ("dbos.workflow_output", "workflow_uuid"),
                          ("rein_attempt_runs", "workflow_id")):
        (n,) = c.query(f"SELECT count(*) FROM {table} WHERE {column} ^@ %s", prefix)[0]
        counts[table] = int(n)
    return counts


def test_prune_removes_a_finished_run_s_queue_rows_and_keeps_a_running_one(
        tmp_path: Path, db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    try:
        w1 = c.worker("w1")
        c.workers_ready("w1")
        path, digest = c.graph(items=3, width=3)
        done = c.rein("run", path, "--approve", digest, "--json")
        assert isinstance(done, subprocess.CompletedProcess) and done.returncode == 0, done
        finished = last_summary(done.stdout)["run_id"]
        # A second run, started once the worker stopped: its attempts wait on the queue
        # and the run is still going while the first is pruned.
        w1.send_signal(signal.SIGTERM)
        assert w1.wait(timeout=DEADLINE) == 0, c.logs()
        c.rein("run", path, "--approve", digest, "--json", wait=False, log="waiting.log")
        c.wait_for("the second run's attempts on the queue", lambda: bool(c.query(
            "SELECT 1 FROM dbos.workflow_status WHERE status = 'ENQUEUED' "
            "AND workflow_uuid NOT LIKE %s", finished + "/%")))
        (running,) = c.query("SELECT DISTINCT split_part(workflow_uuid, '/', 1) "
                             "FROM dbos.workflow_status WHERE status = 'ENQUEUED'")[0]
        assert running != finished
        before = rows_of(c, finished), rows_of(c, running)

        dry = c.rein("runs", "prune", "--status", "succeeded", "--dry-run", "--json",
                     executor=False)
        assert isinstance(dry, subprocess.CompletedProcess) and dry.returncode == 0, dry
        assert [r["run_id"] for r in json.loads(dry.stdout)["removed"]] == [finished]
        assert (rows_of(c, finished), rows_of(c, running)) == before  # a dry run removes nothing

        pruned = c.rein("runs", "prune", "--status", "succeeded", "--json", executor=False)
        assert isinstance(pruned, subprocess.CompletedProcess) and pruned.returncode == 0
        assert [r["run_id"] for r in json.loads(pruned.stdout)["removed"]] == [finished]
        after = rows_of(c, finished), rows_of(c, running)
    finally:
        c.stop()
    # Three attempts: a workflow, its input and output, and an attempt-run row each.
    assert before[0] == {"dbos.workflow_status": 3, "dbos.workflow_input": 3,
                         "dbos.workflow_output": 3, "rein_attempt_runs": 3}
    assert before[1]["dbos.workflow_status"] == 3 and before[1]["rein_attempt_runs"] == 0
    assert after[0] == dict.fromkeys(before[0], 0)
    assert after[1] == before[1]  # the running run's rows are untouched
