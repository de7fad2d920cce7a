"""The fault matrix on ``rein dev``: SIGINT, SIGTERM and SIGKILL while it runs a feature's
verify.

``rein dev`` does graph work when it continues a run a stopped rein left behind: a
``rein submit`` killed during the verify leaves the feature's attempt in flight, and the
next ``rein dev`` resumes the run and runs the verify again. That ``rein dev`` is
signalled while the verify runs. What it leaves is never a cancel (nothing ``cancelled``,
the run resumable), and the next ``rein dev`` finishes the flow as if nothing had happened:
the feature committed once, its one attempt run again under its own number, the features
run's record that of an uninterrupted flow (ids, times and commits aside).
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

from rein.core.ids import RunId
from rein.store.sqlite import SQLiteStore
from tests.dev.scripted import ScriptedDriver, git
from tests.durability.faults import LOOKS, SIGNALS
from tests.durability.support import normalized, rein_argv

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals and process groups")

BRIEF = "# tempconv\n\nA small Python package that converts temperatures.\n"
# The verify: the first run hangs (the submit running it is killed); every later one marks
# that it runs, works a little, and passes.
VERIFY = """\
import os, pathlib, sys, time
marks = pathlib.Path(sys.argv[1])
marks.mkdir(exist_ok=True)
if not (marks / "hung").exists():
    (marks / "hung").write_text(str(os.getpid()))
    time.sleep(120)
(marks / f"verify.{os.getpid()}").write_text("")
time.sleep(0.3)
"""


class Flow:
    """A repository, ``rein`` as separate processes in it, and the scripted driver."""

    def __init__(self, root: Path, *, hang: bool) -> None:
        self.repo = root / "project"
        (self.repo / "specs").mkdir(parents=True)
        (self.repo / "specs" / "brief.md").write_text(BRIEF)
        git(self.repo, "init", "-q")
        for key, value in (("user.name", "Test"), ("user.email", "test@example.invalid")):
            git(self.repo, "config", key, value)
        self.marks = root / "marks"
        if not hang:
            self.marks.mkdir()
            (self.marks / "hung").write_text("")
        # Beside the repository, named relative to it: two flows verify with the same words.
        (root / "verify.py").write_text(VERIFY)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
        home = root / "home"
        self.env.update({"REIN_ALLOW_MODEL_REQUESTS": "0", "HOME": str(home),
                         "XDG_CONFIG_HOME": str(home / ".config"), "REIN_USER_CONFIG": "",
                         "REIN_MANAGED_CONFIG": str(root / "etc" / "rein.toml")})
        plan = {"features": [{
            "id": "c_to_f", "title": "Celsius to Fahrenheit", "priority": 1,
            "description": "tempconv.c_to_f(c) returns the temperature in Fahrenheit.",
            "context": {"files": ["tempconv/__init__.py", "tests/test_c_to_f.py"]},
            "verify": [sys.executable, "../verify.py", "../marks"]}]}
        self.driver = ScriptedDriver(self.repo, self.rein, bad_plan_first=False,
                                     wrong_first=False, plan=plan)

    def rein(self, *args: str) -> tuple[int, str]:
        done = subprocess.run(rein_argv(*args), cwd=self.repo, env=self.env,
                              capture_output=True, text=True, timeout=120, check=False)
        return done.returncode, done.stdout

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(rein_argv(*args), cwd=self.repo, env=self.env, text=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def to_the_feature(self) -> dict[str, Any]:
        """Plan, approve the feature graph, and hand out the feature's instruction."""
        _code, where = self.driver.dev()
        _code, pending = self.driver.submit(self.driver.work(where["instruction"]))
        assert pending.get("for") == "approval", pending
        _code, out = self.rein("approvals", "list", "--json")
        [asked] = [a for a in json.loads(out)["approvals"] if a["status"] == "pending"]
        assert self.rein("approvals", "accept", asked["approval_id"])[0] == 0
        _code, where = self.driver.dev()
        assert where["instruction"]["node"] == "feature_c_to_f", where
        return self.driver.work(where["instruction"])

    def reached(self, mark: str) -> bool:
        return self.marks.is_dir() and any(p.name.startswith(mark)
                                           for p in self.marks.iterdir())

    def features_run(self) -> str:
        flow = json.loads((self.repo / ".rein" / "dev" / "flow.json").read_text())
        return str(flow["features_run"])

    def record(self) -> dict[str, Any]:
        from rein.engine.run.record import build_record

        store = SQLiteStore.open(self.repo, create=False)
        assert store is not None
        try:
            return build_record(store, self.features_run())
        finally:
            store.close()

    def finish(self) -> dict[str, Any]:
        for _ in range(4):
            _code, where = self.driver.dev()
            if where["reason"] != "waiting":
                return where
        raise AssertionError(f"the flow did not end: {where}")


def _wait(proc: subprocess.Popen[str], done: Any) -> bool:
    import select

    for _ in range(LOOKS):
        if done() or proc.poll() is not None:
            break
        select.select([], [], [], 0.01)  # the interval between two looks
    return bool(done()) and proc.poll() is None


def _comparable(record: dict[str, Any]) -> Any:
    """A features run's record without what differs between two flows by design: ids and
    times, the feature graph's digest (each plan has an id of its own), and the commits (a
    commit's id depends on its time)."""
    import re

    out = normalized(record)
    out["graph_digest"] = "<digest>"
    out.setdefault("metadata", {})["x-rein-approved-digest"] = "<digest>"
    return json.loads(re.sub(r"committed feature (\w+) as [0-9a-f]{7,40}",
                             r"committed feature \1 as <commit>", json.dumps(out)))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Any:
    flow = Flow(tmp_path_factory.mktemp("clean"), hang=False)
    envelope = flow.to_the_feature()
    assert flow.driver.submit(envelope)[0] == 0
    assert flow.finish()["reason"] == "done"
    return _comparable(flow.record())


@pytest.mark.timeout(300)
@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_rein_dev_signalled_mid_verify_then_rein_dev_finishes_the_flow(
        tmp_path: Path, sig: signal.Signals, uninterrupted: Any) -> None:
    flow = Flow(tmp_path, hang=True)
    envelope = flow.to_the_feature()
    flow.driver.write(".rein/inbox.json", json.dumps(envelope))
    submit = flow.start("submit", "--json")
    assert _wait(submit, lambda: flow.reached("hung")), "the verify never started"
    submit.send_signal(signal.SIGKILL)
    submit.wait(60)

    dev = flow.start("dev", "--json")  # resumes the run: the verify runs again, here
    assert _wait(dev, lambda: flow.reached("verify.")), "rein dev ran no verify"
    dev.send_signal(sig)
    dev.wait(60)
    if sig is signal.SIGINT:
        assert dev.returncode == 130  # interrupted, as Ctrl-C ends a command

    store = SQLiteStore.open(flow.repo, create=False)
    assert store is not None
    try:
        run = store.get_run(flow.features_run())
        assert run is not None and run.status.value == "running"  # resumable, not ended
        nodes = store.nodes(RunId(flow.features_run()))
        assert not [n.node_key for n in nodes if n.status.value == "cancelled"]
    finally:
        store.close()

    assert flow.finish()["reason"] == "done"
    subjects = git(flow.repo, "log", "--format=%s").splitlines()
    assert len(subjects) == 1, subjects  # the feature, committed once
    record = flow.record()
    [feature] = [n for n in record["nodes"] if n["node_id"] == "feature_c_to_f"]
    assert [a["attempt"] for a in feature["attempts"]] == [1]
    assert feature["attempts"][0].get("x-rein-rerun") is True
    assert _comparable(record) == uninterrupted
