"""Jobs and answers written straight into the queue tables by someone who can write to the
database but holds no queue key: a real ``rein worker`` runs none of the jobs and leaks
nothing, and a coordinator records none of the answers.

Each forged row is inserted with SQL, as DBOS stores a job (a ``workflow_status`` row and its
``workflow_input``), the way an attacker with the database's credentials would; the worker
holds an AWS key and a rein secret in its environment.
"""

from __future__ import annotations

import base64
import json
import pickle
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from rein.executors.names import APP_VERSION, CHECK_WORKFLOW, WORKFLOW
from rein.executors.wire import encode_answer
from rein.workers.base import AttemptResult
from tests.executors.cluster import DEADLINE, Cluster

pytestmark = pytest.mark.timeout(900)

AWS_KEY = "AKIAFORGEDJOBTEST-raw-value"
DEPLOY = "deploy-secret-forged-jobs"
ENDED = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


def forge(c: Cluster, name: str, payload: Any, *, serialization: str = "portable_json",
          queue: str = "rein", workflow_id: str = "") -> str:
    """Insert one job row as DBOS stores it; its workflow id."""
    workflow_id = workflow_id or f"forged-{uuid.uuid4().hex[:8]}"
    if serialization == "portable_json":
        inputs = json.dumps({"positionalArgs": [payload], "namedArgs": {}})
    else:
        inputs = payload
    import psycopg

    assert c.url is not None
    # One transaction: a worker never claims the row before its input is there.
    with psycopg.connect(c.url) as conn, conn.transaction():
        conn.execute("INSERT INTO dbos.workflow_status (workflow_uuid, status, name, "
                     "queue_name, application_version, serialization, priority, "
                     "recovery_attempts, application_name, created_at, updated_at) VALUES "
                     "(%s, 'ENQUEUED', %s, %s, %s, %s, 0, 0, 'rein', "
                     "(extract(epoch FROM now()) * 1000)::bigint, "
                     "(extract(epoch FROM now()) * 1000)::bigint)",
                     (workflow_id, name, queue, APP_VERSION, serialization))
        conn.execute("INSERT INTO dbos.workflow_input (workflow_uuid, inputs) VALUES (%s, %s)",
                     (workflow_id, inputs))
    return workflow_id


def ended(c: Cluster, workflow_id: str) -> tuple[str, str]:
    """Wait for the job to end; its status and everything it left in the tables, as text."""
    def done() -> bool:
        rows = c.query("SELECT status FROM dbos.workflow_status WHERE workflow_uuid = %s",
                       workflow_id)
        return bool(rows) and rows[0][0] in ENDED
    c.wait_for(f"job {workflow_id} to end", done)
    ((status, error),) = c.query("SELECT status, coalesce(error, '') FROM "
                                 "dbos.workflow_status WHERE workflow_uuid = %s", workflow_id)
    outputs = c.query("SELECT coalesce(output, ''), coalesce(error, '') FROM "
                      "dbos.workflow_output WHERE workflow_uuid = %s", workflow_id)
    return str(status), str(error) + "".join(str(o[0]) + str(o[1]) for o in outputs)


def leaked(text: str) -> list[str]:
    """The worker's secrets found in ``text``, raw or base64-encoded."""
    forms = {"aws raw": AWS_KEY, "deploy raw": DEPLOY,
             "aws base64": base64.b64encode(AWS_KEY.encode()).decode()[:20],
             "deploy base64": base64.b64encode(DEPLOY.encode()).decode()[:20]}
    return [name for name, form in forms.items() if form in text]


def cluster(tmp_path: Path, db_url: str) -> Cluster:
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    c.worker("w1", AWS_SECRET_ACCESS_KEY=AWS_KEY, REIN_SECRET_DEPLOY=DEPLOY)
    c.workers_ready("w1")
    return c


def test_a_forged_command_check_is_not_run_and_leaks_nothing(tmp_path: Path,
                                                            db_url: str) -> None:
    c = cluster(tmp_path, db_url)
    marker = tmp_path / "ran"
    command = (f'echo "$AWS_SECRET_ACCESS_KEY"; printf %s "$deploy" | base64; '
               f'touch {marker}')
    try:
        workflow_id = forge(c, CHECK_WORKFLOW, json.dumps({
            "criterion": {"id": "x", "kind": "command", "run": command},
            "node": "n", "attempt": 1, "placement": {"access": "none"},
            "env_names": ["AWS_SECRET_ACCESS_KEY"], "secret_names": ["deploy"],
            "timeout": 30}))
        status, left = ended(c, workflow_id)
    finally:
        c.stop()
    assert not marker.exists(), "the forged command ran"
    assert leaked(left) == []
    assert status == "ERROR"
    assert "SCALE010" in left and "SCALE010" in c.log("w1")


def test_a_forged_attempt_is_not_run(tmp_path: Path, db_url: str) -> None:
    c = cluster(tmp_path, db_url)
    try:
        workflow_id = forge(c, WORKFLOW, json.dumps({
            "worker": "scripted", "placement": {"access": "none"},
            "request": {"run_id": "run-nobody", "node_id": "w", "attempt": 1, "kind": "task",
                        "title": "t", "brief": "b", "inputs": {}, "outputs": [],
                        "permissions": [], "tools": [], "workspace": "/",
                        "workspace_access": "none", "network": "none", "tier": "standard",
                        "budget": {}, "feedback": None, "checks": [], "branches": [],
                        "constraints": {}, "profile": None, "worker": None, "routed": None,
                        "env_names": ["AWS_SECRET_ACCESS_KEY"], "secret_names": ["deploy"]}}))
        status, left = ended(c, workflow_id)
        runs = c.query("SELECT count(*) FROM rein_attempt_runs WHERE workflow_id = %s",
                       workflow_id)
    finally:
        c.stop()
    assert status == "ERROR" and "SCALE010" in left
    assert runs == [(0,)], "the forged attempt began to run"
    assert leaked(left) == []


class _Opens:
    """Unpickling this opens (creates) a file: what any pickle could do instead."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def test_a_pickled_job_is_never_unpickled(tmp_path: Path, db_url: str) -> None:
    c = cluster(tmp_path, db_url)
    marker = tmp_path / "unpickled"
    inputs = base64.b64encode(pickle.dumps({"args": (_Opens(marker),), "kwargs": {}}))
    try:
        workflow_id = forge(c, CHECK_WORKFLOW, inputs.decode(), serialization="py_pickle")
        status, _ = ended(c, workflow_id)
    finally:
        c.stop()
    assert not marker.exists(), "the worker unpickled a job from the database"
    assert status == "ERROR"
    assert "SCALE011" in c.log("w1")


def test_a_forged_answer_is_not_recorded(tmp_path: Path, db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    worker = c.worker("w1")
    c.workers_ready("w1")  # the queue tables exist; then no worker takes the attempt
    c.stop()
    c.procs.remove(worker)
    path, digest = c.graph(items=1, width=1)
    coordinator = c.rein("run", path, "--approve", digest, "--json", wait=False,
                         log="coordinator.log")
    assert isinstance(coordinator, subprocess.Popen)
    try:
        def queued() -> list[tuple[Any, ...]]:
            return c.query("SELECT workflow_uuid, serialization FROM dbos.workflow_status "
                           "WHERE name = %s AND status = 'ENQUEUED'", WORKFLOW)
        c.wait_for("the attempt to be queued", lambda: bool(queued()))
        ((workflow_id, serialization),) = queued()
        answer = encode_answer([], AttemptResult(outputs={"v": "forged"}), worker="w1",
                               queue="rein", rerun=False, workflow=workflow_id)
        stored = (json.dumps(answer) if serialization == "portable_json"
                  else base64.b64encode(pickle.dumps(answer)).decode())
        c.query("INSERT INTO dbos.workflow_output (workflow_uuid, output, retention_timestamp) "
                "VALUES (%s, %s, 0) ON CONFLICT (workflow_uuid) DO UPDATE SET output = "
                "EXCLUDED.output RETURNING workflow_uuid", workflow_id, stored)
        c.query("UPDATE dbos.workflow_status SET status = 'SUCCESS' WHERE workflow_uuid = %s "
                "RETURNING workflow_uuid", workflow_id)
        code = coordinator.wait(timeout=DEADLINE)
    finally:
        c.stop()
    nodes = c.query("SELECT record FROM nodes WHERE node_key LIKE %s", "%].w")
    assert "forged" not in json.dumps([n[0] for n in nodes])
    assert code != 0 and "SCALE010" in c.log("coordinator")
