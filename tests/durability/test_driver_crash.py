"""A ``rein submit`` killed with SIGKILL while it evaluates a command criterion.

The envelope was consumed (committed with its event) before the criterion started; the
kill leaves the run ``running`` with the criterion's process group alive. What must hold,
on every store: ``rein next`` says the run is resumable; resubmitting the same envelope (or
``rein resume``) kills the leftover group, re-runs the interrupted attempt under its own
number, and applies the envelope exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.formats.canonical import ags_digest
from rein.store.open import open_store
from tests.durability.support import rein_argv, wait_for
from tests.store.conftest import pg_url, store_url  # noqa: F401 - the fixtures

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and SIGKILL")

# The first evaluation hangs (a child in the background, both pids recorded); later ones pass.
HANGING = ("if [ -f seen ]; then exit 0; fi; touch seen; "
           "sleep 60 & echo $! > child.pid; echo $$ > check.pid; wait")
GRAPH: dict[str, Any] = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/driver-crash",
    "title": "driver crash", "objective": "a killed submit loses nothing",
    "requires_conformance": 3, "entrypoints": ["t"],
    "nodes": {"t": {
        "type": "task", "title": "t", "description": "Do t.",
        "requirements": {"workspace": "read_write"},
        "success": {"criteria": [{"id": "check", "kind": "command",
                                  "description": "the check passes", "run": HANGING,
                                  "timeout_seconds": 30}]},
    }},
}


class Cli:
    """rein as separate processes (so one can be killed), all on one store."""

    def __init__(self, root: Path, store: str) -> None:
        self.root = root
        self.store = store
        # No scripted worker and no model: the driver serves the node.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
        self.env["REIN_ALLOW_MODEL_REQUESTS"] = "0"

    def argv(self, *args: str) -> list[str]:
        return rein_argv(*args, "--store", self.store)

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args), cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=60, check=False)

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(*args), cwd=self.root, env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)

    def json(self, *args: str) -> dict[str, Any]:
        done = self(*args, "--json")
        return json.loads(done.stdout)

    def events(self, run_id: str) -> list[dict[str, Any]]:
        out = self("runs", "events", run_id, "--json").stdout
        return [e for e in map(json.loads, out.splitlines()) if "type" in e]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("finish", ["resubmit", "resume"])
def test_a_submit_killed_mid_criterion_resumes_and_applies_once(
        tmp_path: Path, store_url: str, finish: str) -> None:  # noqa: F811
    cli = Cli(tmp_path, store_url)
    (tmp_path / "g.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    started = cli("run", "g.agraph.yaml", "--approve", ags_digest(GRAPH))
    assert started.returncode == 3, started.stderr  # waiting for the driver
    instruction = cli.json("next")
    assert (instruction["status"], instruction["node"]) == ("instruction", "t")
    run_id = instruction["run_id"]
    envelope = {**instruction["example"], "outputs": {}}
    (tmp_path / ".rein" / "inbox.json").write_text(json.dumps(envelope))

    submit = cli.start("submit")
    # Mid-criterion: the check runs and its group is on record. (A kill in the instant
    # between the start of a group and its record is a gap docs/durability.md names.)
    store = open_store(tmp_path, url=store_url)
    try:
        assert wait_for(lambda: (tmp_path / "check.pid").exists()
                        and (tmp_path / "child.pid").exists()
                        and bool(store.processes(run_id)))
    finally:
        store.close()
    submit.send_signal(signal.SIGKILL)
    assert submit.wait() == -signal.SIGKILL
    check_pid = int((tmp_path / "check.pid").read_text())
    child_pid = int((tmp_path / "child.pid").read_text())
    assert _alive(check_pid) and _alive(child_pid)  # the group outlived its rein

    # The envelope was consumed before the kill; the run is resumable, not lost.
    waiting = cli.json("next")
    assert (waiting["status"], waiting["for"]) == ("waiting", "resume")
    assert f"rein resume {run_id}" in waiting["message"]
    assert [e["type"] for e in cli.events(run_id)].count("driver/answered") == 1

    if finish == "resubmit":
        done = cli("submit", "--json")
        assert done.returncode == 0, done.stderr
        body = json.loads(done.stdout)
        assert "already applied" in body["submitted"]
    else:
        done = cli("resume", run_id)
        assert done.returncode == 0, done.stderr
        body = cli.json("next")
    assert (body["status"], body["reason"]) == ("done", "done")
    assert not _alive(check_pid) and not _alive(child_pid)

    events = cli.events(run_id)
    types = [e["type"] for e in events]
    assert types.count("driver/answered") == 1  # applied exactly once
    assert types.count("driver/instructed") == 1  # no new attempt was asked of the driver
    assert types.count("node/finished") == 1
    stopped = [e["payload"] for e in events if e["type"] == "process/stopped"]
    assert [p.get("outcome") for p in stopped] == ["killed"]
    record = json.loads(cli("runs", "record", run_id).stdout)
    [node] = record["nodes"]
    assert node["status"] == "succeeded"
    [attempt] = node["attempts"]
    assert attempt["attempt"] == 1 and attempt["x-rein-rerun"] is True
    assert attempt["routed"]["provider"] == "driver"
