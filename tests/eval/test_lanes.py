"""Trials on DBOS lanes: a coordinator puts them on PostgreSQL queues, `rein eval --serve`
processes run them, and nothing runs that the fleet did not sign or a person did not approve.
Real processes and a real database; skipped, saying why, without PostgreSQL or the scale
extra."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_eval

from tests.executors.cluster import fresh_database, postgres_base

REIN = "import sys; from rein.cli import main; sys.exit(main())"
LOOKS = 2400  # bounded waits: this many looks, 0.05 s apart at most


@pytest.fixture
def db_url() -> Iterator[str]:
    yield from fresh_database(postgres_base())


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from rein.executors.queue_key import new_key_file

    path = tmp_path / "keys" / "queue.key"
    new_key_file(path)
    monkeypatch.setenv("REIN_QUEUE_KEY_FILE", str(path))
    return path


def _worker(ws: Path, db_url: str, log: Path, name: str = "w1") -> subprocess.Popen[bytes]:
    """A `rein eval --serve` process, once it says it serves (bounded looks at its log)."""
    process = subprocess.Popen(
        [sys.executable, "-c", REIN, "eval", "--serve", "--store", db_url, "--workspace",
         str(ws), "--lanes", "2", "--name", name], cwd=ws, env=dict(os.environ),
        stdout=subprocess.DEVNULL, stderr=log.open("wb"), start_new_session=True)
    for _ in range(LOOKS):
        if "serving trials" in log.read_text(errors="replace"):
            return process
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    pytest.fail(f"the worker did not start: {log.read_text(errors='replace')}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_trials_run_on_a_worker_and_are_recorded_by_their_coordinator(
        ws: Path, tmp_path: Path, db_url: str, key_file: Path, capsys: Any) -> None:
    worker = _worker(ws, db_url, tmp_path / "worker.log")
    try:
        code, result = run_eval(capsys, str(SUITE / "fix-greeting"),
                                str(SUITE / "harbor-hello"), "--config", "oracle",
                                "--config", "nop", "--executor", "dbos", "--store", db_url)
    finally:
        _stop(worker)
    assert code == 0, result
    rates = {c["name"]: (c["solved"], c["trials"]) for c in result["configurations"]}
    assert rates == {"oracle": (2, 2), "nop": (0, 2)}
    assert {t["lane"] for t in result["trials"]} == {"dbos:w1"}
    # The coordinator's journal has each trial once; the worker wrote the trial folders.
    journal = (Path(result["folder"]) / "journal.jsonl").read_text().splitlines()
    finished = [json.loads(line)["trial"] for line in journal
                if json.loads(line)["event"] == "finished"]
    assert sorted(finished) == sorted(t["trial"] for t in result["trials"])
    assert all((Path(t["folder"]) / "agent" / "trajectory.json").is_file()
               for t in result["trials"])


def test_a_job_the_fleet_did_not_sign_or_whose_plan_changed_is_not_run(
        ws: Path, tmp_path: Path, db_url: str, key_file: Path) -> None:
    from dbos import DBOSClient

    from rein.config import load_config
    from rein.eval.lanes import APP_VERSION, QUEUE, WORKFLOW, plan_digest, workflow_id
    from rein.eval.runner import Options, start
    from rein.executors.queue_key import QueueKey, load_key
    from rein.executors.serialization import json_only

    base = load_config(ws)
    ledger, _loaded = start(ws, [SUITE / "fix-greeting"], ["oracle"], configs_file=None,
                            options=Options(executor="dbos"), base=base)
    trial = "fix-greeting__oracle__1"
    good = {"evaluation": ledger.id, "trial": trial, "plan": plan_digest(ledger.plan),
            "approval": None}
    forged_key = QueueKey(b"x" * 40)
    jobs = {1: (forged_key, good), 2: (load_key(base, os.environ), {**good,
                                                                    "plan": "sha256:0"})}
    worker = _worker(ws, db_url, tmp_path / "worker.log")
    client = DBOSClient(system_database_url=db_url, serializer=json_only())
    try:
        for attempt, (key, job) in jobs.items():
            wid = workflow_id(ledger.id, trial, attempt)
            text = json.dumps({**job, "attempt": attempt}, sort_keys=True)
            client.enqueue({"queue_name": QUEUE, "workflow_name": WORKFLOW,
                            "workflow_id": wid, "app_version": APP_VERSION},
                           key.sign(WORKFLOW, wid, text))
        errors = {}
        for _ in range(LOOKS):
            for attempt in jobs:
                wid = workflow_id(ledger.id, trial, attempt)
                [status] = client.list_workflows(workflow_ids=[wid])
                if status.status not in ("ENQUEUED", "PENDING"):
                    errors[attempt] = (status.status, str(status.error))
            if len(errors) == len(jobs):
                break
            time.sleep(0.05)
    finally:
        client.destroy()
        _stop(worker)
    assert errors[1][0] == "ERROR" and "SCALE010" in errors[1][1]
    assert errors[2][0] == "ERROR" and "EVAL025" in errors[2][1]
    assert not (ledger.trials_root / trial).exists()  # neither ran


def test_without_a_postgresql_url_nothing_is_planned(ws: Path, capsys: Any) -> None:
    code, out = run_eval(capsys, str(SUITE / "fix-greeting"), "--config", "oracle",
                         "--executor", "dbos")
    pytest.importorskip("dbos", reason="the scale extra is not installed")
    assert (code, out["error"]["code"]) == (64, "EVAL026")
    assert not (ws / ".rein").exists()


def test_a_resumed_coordinator_adopts_the_trial_its_worker_ran(
        ws: Path, tmp_path: Path, db_url: str, key_file: Path, capsys: Any) -> None:
    """The coordinator was killed after putting attempt 1 on the queue: resumed, it
    attaches to that attempt (run by the worker meanwhile) instead of running attempt 2."""
    from dbos import DBOSClient

    from rein.config import load_config
    from rein.eval.lanes import APP_VERSION, QUEUE, WORKFLOW, plan_digest, workflow_id
    from rein.eval.ledger import Ledger
    from rein.eval.runner import Options, plan_trials, spec_for, start
    from rein.executors.queue_key import load_key
    from rein.executors.serialization import json_only

    base = load_config(ws)
    options = Options(executor="dbos")
    ledger, loaded = start(ws, [SUITE / "fix-greeting"], ["oracle"], configs_file=None,
                           options=options, base=base)
    [planned] = plan_trials(loaded.scenarios, loaded.configs, 1)
    spec = spec_for(ledger, loaded, planned, 1, options=options, base=base, env={})
    ledger.started(planned.trial_id, 1, spec.root)  # ... and then the coordinator died
    worker = _worker(ws, db_url, tmp_path / "worker.log")
    client = DBOSClient(system_database_url=db_url, serializer=json_only())
    try:
        wid = workflow_id(ledger.id, planned.trial_id, 1)
        job = json.dumps({"evaluation": ledger.id, "trial": planned.trial_id, "attempt": 1,
                          "plan": plan_digest(ledger.plan), "approval": None}, sort_keys=True)
        client.enqueue({"queue_name": QUEUE, "workflow_name": WORKFLOW, "workflow_id": wid,
                        "app_version": APP_VERSION},
                       load_key(base, os.environ).sign(WORKFLOW, wid, job))
        code, result = run_eval(capsys, "--resume", ledger.id, "--store", db_url)
    finally:
        client.destroy()
        _stop(worker)
    assert code == 0, result
    [trial] = result["trials"]
    assert (trial["status"], trial["attempt"], trial["lane"]) == ("solved", 1, "dbos:w1")
    assert sorted(p.name for p in (ledger.trials_root / planned.trial_id).iterdir()) == ["a1"]
    entries = Ledger.open(ws, ledger.id).entries()
    assert entries[planned.trial_id].result is not None


def test_an_evaluation_in_process_imports_no_dbos(ws: Path) -> None:
    """Scale-out costs nothing when off: `rein eval` in process never imports dbos."""
    script = ("import sys; from rein.cli import main; code = main(['eval', "
              f"{str(SUITE / 'fix-greeting')!r}, '--config', 'oracle', '-q']); "
              "print('dbos' in sys.modules); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script], cwd=ws, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
