"""A 40-item map through two ``rein worker`` processes on a real PostgreSQL server, one of
them SIGKILLed mid-attempt: its attempts are resumed by the other under the same numbers,
marked as re-runs, and the record equals a single-machine run's."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.executors.cluster import DEADLINE, Cluster, claimed_by, comparable, differences

pytestmark = pytest.mark.timeout(900)  # processes that start DBOS take seconds each


def last_summary(log: str) -> dict[str, Any]:
    """The closing ``{"run_id", "status"}`` object of ``rein run --json``."""
    for line in reversed(log.splitlines()):
        if line.startswith("{"):
            doc = json.loads(line)
            if "type" not in doc and "status" in doc:
                return dict(doc)
    raise AssertionError(f"no run summary in:\n{log[-3000:]}")


def item_attempts(nodes: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {key: list(row.get("attempts") or []) for key, row in nodes.items()
            if key.endswith("].w")}


def single_machine(root: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The same graph run in one process on the embedded store: its record and nodes."""
    single = Cluster(root, None)
    path, digest = single.graph()
    done = single.rein("run", path, "--approve", digest, "--json", executor=False)
    assert isinstance(done, subprocess.CompletedProcess) and done.returncode == 0, done
    run_id = last_summary(done.stdout)["run_id"]
    return single.record(run_id), single.node_rows(run_id)


def test_a_killed_worker_s_attempts_finish_on_the_other(tmp_path: Path, db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url)
    try:
        c.worker("w1")
        w2 = c.worker("w2")
        c.workers_ready("w1", "w2")
        path, digest = c.graph()
        coordinator = c.rein("run", path, "--approve", digest, "--json", wait=False,
                             log="coordinator.log")
        c.wait_for("w2 in the middle of an attempt", lambda: claimed_by(c, "w2") > 0)
        w2.send_signal(signal.SIGKILL)
        w2.wait()
        assert coordinator.wait(timeout=DEADLINE) == 0, c.logs()  # type: ignore[union-attr]
        summary = last_summary(c.log("coordinator"))
        assert summary["status"] == "succeeded"
        record = c.record(summary["run_id"])
        nodes = c.node_rows(summary["run_id"])
    finally:
        c.stop()
    attempts = item_attempts(nodes)
    assert len(attempts) == 40
    # One attempt each: the killed worker's attempts ran again under the same number.
    assert all(len(a) == 1 and a[0]["status"] == "succeeded" for a in attempts.values())
    placed = [a[0]["x-rein-placement"] for a in attempts.values()]
    assert {p["worker"] for p in placed} <= {"w1", "w2"}
    reruns = [p for p in placed if p["rerun"]]
    assert reruns, "the attempts w2 was running when it died are not marked as re-runs"
    assert all(p["worker"] == "w1" for p in reruns)
    assert any(p["worker"] == "w1" and not p["rerun"] for p in placed)
    # The killed worker's in-flight attempts carry the same re-run marker as on one machine.
    assert all(a[0].get("x-rein-rerun") is None for a in attempts.values())
    single_record, single_nodes = single_machine(tmp_path / "single")
    assert not differences(comparable(record), comparable(single_record))
    assert not differences(comparable(nodes), comparable(single_nodes))
