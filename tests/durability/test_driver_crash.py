"""A ``rein submit`` killed with SIGKILL after its envelope was recorded.

The envelope is consumed (committed with its event) before the run advances. Killed while
a command criterion runs, the submit leaves the run ``running`` with the criterion's
process group alive; killed at any commit after the answer (the answer itself, the
attempt taken up again, the node's end, the next instruction), it leaves the run wherever
that commit left it. What must hold, on every store: ``rein next`` says what to do (never
"no worker serves node ?"); resubmitting the same envelope (or ``rein resume``) kills any
leftover group, finishes the answered attempt once, and the run goes on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
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


# `rein submit` that kills itself with SIGKILL just after the commit that writes the
# `nth` event of type `kill_after` (a hook on the store's public on_commit): a real kill, at
# an exact point.
KILLER = """
import os, signal, sys
from rein.store import open as opening

kill_after, nth = sys.argv[1], int(sys.argv[2])
seen = [0]
real = opening.open_store

def open_store(*args, **kwargs):
    store = real(*args, **kwargs)
    def hook(events):
        seen[0] += sum(1 for e in events if e.type == kill_after)
        if seen[0] >= nth:
            os.kill(os.getpid(), signal.SIGKILL)
    if store is not None:
        store.on_commit(hook)
    return store

opening.open_store = open_store
from rein.cli import main
sys.exit(main(sys.argv[3:]))
"""
# t is checked by a command, then u follows: the commits of one submit, in order.
CHAIN: dict[str, Any] = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/driver-chain",
    "title": "driver chain", "objective": "a killed submit loses nothing",
    "requires_conformance": 3, "entrypoints": ["t"],
    "nodes": {
        "t": {"type": "task", "title": "t", "description": "Do t.",
              "requirements": {"workspace": "read_write"},
              "success": {"criteria": [{"id": "check", "kind": "command",
                                        "description": "the check passes", "run": "true",
                                        "timeout_seconds": 30}]}},
        "u": {"type": "task", "title": "u", "description": "Do u.", "depends_on": ["t"]},
    },
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

    def killed_after(self, event: str, nth: int, *args: str) -> int:
        """Run ``rein ARGS`` until just after the ``nth`` commit of an ``event``: its exit."""
        argv = [sys.executable, "-c", KILLER, event, str(nth), *args, "--store", self.store]
        return subprocess.run(argv, cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=60, check=False).returncode

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


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("point", "finish"), [
    ("driver/answered", "resubmit"),  # recorded; the run still says waiting
    ("driver/answered", "resume"),
    ("attempt/started", "resubmit"),  # the run took the answer up; no criterion started yet
    ("node/finished", "resubmit"),  # the attempt and its node ended; nothing after them
    ("driver/instructed", "resubmit"),  # the next node's instruction issued; not paused
])
def test_a_submit_killed_after_its_answer_is_recorded_finishes_the_attempt_once(
        tmp_path: Path, store_url: str, point: str, finish: str) -> None:  # noqa: F811
    cli = Cli(tmp_path, store_url)
    (tmp_path / "g.agraph.yaml").write_text(yaml.safe_dump(CHAIN, sort_keys=False))
    started = cli("run", "g.agraph.yaml", "--approve", ags_digest(CHAIN))
    assert started.returncode == 3, started.stderr
    instruction = cli.json("next")
    run_id = instruction["run_id"]
    (tmp_path / ".rein" / "inbox.json").write_text(json.dumps(instruction["example"]))
    assert cli.killed_after(point, 1, "submit") == -signal.SIGKILL
    assert [e["type"] for e in cli.events(run_id)].count("driver/answered") == 1

    shown = cli.json("next")
    assert "node ?" not in shown.get("message", "")
    if point == "driver/instructed":  # u's instruction is already out: it is what comes next
        assert (shown["status"], shown["node"]) == ("instruction", "u")
    else:
        assert (shown["status"], shown["for"]) == ("waiting", "resume"), shown
        assert f"rein resume {run_id}" in shown["message"]
    if point == "driver/answered":
        assert shown["node"] == "t" and "`rein submit` the same envelope" in shown["message"]
        # While a process holds the run (a live submit between its answer and the advance),
        # the answer is not said to be left behind.
        store = open_store(tmp_path, url=store_url)
        try:
            with store.lock_run(run_id):
                assert cli.json("next")["for"] == "run"
        finally:
            store.close()

    if finish == "resubmit":
        again = cli("submit", "--json")
        assert again.returncode == 0, again.stderr
        body = json.loads(again.stdout)
        assert "already applied" in body["submitted"]
    else:
        assert cli("resume", run_id).returncode == 3
        body = cli.json("next")
    assert (body["status"], body["node"]) == ("instruction", "u"), body
    (tmp_path / ".rein" / "inbox.json").write_text(json.dumps(body["example"]))
    done = cli("submit", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "done"

    events = cli.events(run_id)
    answered = [e["payload"]["node"] for e in events if e["type"] == "driver/answered"]
    assert answered == ["t", "u"]  # each envelope applied exactly once
    instructed = [e["payload"]["node"] for e in events if e["type"] == "driver/instructed"]
    assert instructed == ["t", "u"]  # no attempt was asked of the driver twice
    finished = [e["payload"]["node"] for e in events if e["type"] == "node/finished"]
    assert finished == ["t", "u"]
    record = json.loads(cli("runs", "record", run_id).stdout)
    assert {n["node_id"]: (n["status"], [a["attempt"] for a in n["attempts"]])
            for n in record["nodes"]} == {"t": ("succeeded", [1]), "u": ("succeeded", [1])}


@pytest.mark.timeout(120)
def test_an_approval_answer_killed_before_the_run_took_it_up_is_named_and_resumed(
        tmp_path: Path, store_url: str) -> None:  # noqa: F811
    """The same gap on the approval side: `rein approvals accept` records the answer in a
    transaction of its own, then advances the run; killed in between, the run is paused
    with nothing pending, and `rein next` says what continues it."""
    gated: dict[str, Any] = {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/gated", "title": "gated",
        "objective": "a person approves", "entrypoints": ["review"],
        "nodes": {"review": {"type": "gate", "title": "review", "description": "Approve.",
                             "gate": {"mode": "approve", "prompt": "Go?"}}}}
    cli = Cli(tmp_path, store_url)
    (tmp_path / "g.agraph.yaml").write_text(yaml.safe_dump(gated, sort_keys=False))
    assert cli("run", "g.agraph.yaml", "--approve", ags_digest(gated)).returncode == 3
    waiting = cli.json("next")
    [approval] = waiting["approvals"]
    assert cli.killed_after("approval/answered", 1, "approvals", "accept",
                            approval["approval_id"]) == -signal.SIGKILL

    shown = cli.json("next")
    assert (shown["status"], shown["for"], shown["node"]) == ("waiting", "resume", "review")
    assert approval["approval_id"] in shown["message"] and "node ?" not in shown["message"]
    assert cli("resume", waiting["run_id"]).returncode == 0
    assert (cli.json("next")["status"]) == "done"
