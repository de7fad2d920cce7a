"""A remote attempt's ``command`` criteria run on the worker that ran the attempt, and a
dead worker's are taken by another with the same tree."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.executors.cluster import Cluster
from tests.executors.test_two_workers import last_summary

pytestmark = pytest.mark.timeout(900)

# Each process has its own WHO: the names of the node's variables cross, the values are the
# worker's, so a command run by the coordinator would print "coordinator".
WHO = {"requirements": {"environment": ["WHO"]},
       "success": {"criteria": [{"id": "where", "kind": "command", "run": 'echo "$WHO"',
                                 "description": "says which machine ran it"}]}}


def test_a_command_criterion_runs_on_the_worker_that_ran_the_attempt(tmp_path: Path,
                                                                    db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    try:
        c.worker("w1", WHO="w1")
        c.worker("w2", WHO="w2")
        c.workers_ready("w1", "w2")
        path, digest = c.graph(items=12, width=8, task=WHO)
        done = c.rein("run", path, "--approve", digest, "--json",
                      extra={"WHO": "coordinator"})
        assert isinstance(done, subprocess.CompletedProcess)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr + c.logs()
        nodes = c.node_rows(last_summary(done.stdout)["run_id"])
        checks = c.query("SELECT count(*) FROM dbos.workflow_status WHERE name = 'rein_check'"
                         " AND status = 'SUCCESS'")
    finally:
        c.stop()
    items: list[dict[str, Any]] = [v["attempts"][0] for k, v in nodes.items()
                                   if k.endswith("].w")]
    assert len(items) == 12 and checks == [(12,)]
    for attempt in items:
        ran_on = attempt["x-rein-placement"]["worker"]
        (result,) = attempt["success"]["results"]
        assert result["passed"] is True
        assert json.loads(result["evidence"])["stdout"].strip() == ran_on
    assert {a["x-rein-placement"]["worker"] for a in items} <= {"w1", "w2"}


def test_a_verdict_round_trips() -> None:
    from rein.engine.run.criteria.base import Verdict, verdict_document, verdict_of

    verdict = Verdict(passed=False, evidence={"exit_code": 1, "stdout": "x"},
                      evidence_truncated=True, error="e", error_code="CRIT006",
                      failure_class="timeout", extra={"x-a": 1})
    assert verdict_of(json.loads(json.dumps(verdict_document(verdict)))) == verdict
    # The worker's refusal to run a check names only what it knows; the rest defaults.
    assert verdict_of({"passed": False, "error": "not run: moved", "error_code": "SCALE007"}
                      ) == Verdict(passed=False, error="not run: moved", error_code="SCALE007")
