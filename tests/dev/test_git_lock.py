"""A `.git/index.lock` left by a killed git, and one a live git holds, during a handoff.

The lock here is a real one: a `git add` is started with a clean filter that announces
itself and then waits (git holds `index.lock` while it runs filters), and its process group
is killed with SIGKILL, as an agent's tool timeout or a person's Ctrl-C kills a group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from devflow_support import Cli, approve, drive
from scripted import ScriptedDriver, git

from rein.dev import locks

WAIT = ("import pathlib, sys, time\n"
        "pathlib.Path(sys.argv[1]).touch()\n"
        "time.sleep(3600)\n")


class BlockedAdd:
    """A `git add -A` stopped inside its clean filter: it holds `.git/index.lock`."""

    def __init__(self, repo: Path, tmp: Path) -> None:
        ready = tmp / "filter-ready"
        script = tmp / "wait.py"
        script.write_text(WAIT)
        # Outside the repository: a write to .git/info would be the agent's write outside
        # its grants, refused before rein's git work is reached.
        attributes = tmp / "attributes"
        attributes.write_text("* filter=block\n")
        self.attributes = attributes
        self.process = subprocess.Popen(
            ["git", "-c", f"core.attributesFile={attributes}",
             "-c", f"filter.block.clean={sys.executable} {script} {ready}", "add", "-A"],
            cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        for _ in range(600):  # bounded: the filter announces itself once git runs it
            if ready.exists() or self.process.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), "the filter never ran"
        self.lock = repo / ".git" / "index.lock"
        assert self.lock.exists()

    def kill(self) -> None:
        """SIGKILL to the whole group: git and its filter die, the lock stays."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.attributes.unlink()
        assert self.lock.exists()


@pytest.fixture
def feature_turn(repo: Path, driver: ScriptedDriver, cli: Cli) -> Iterator[dict]:
    """The flow at its first feature, the agent's correct work done and its envelope
    written; the envelope."""
    driver.bad_plan_first = driver.wrong_first = False
    _code, where = driver.dev()
    _code, pending = driver.submit(driver.work(where["instruction"]))
    assert pending.get("for") == "approval", pending
    approve(cli)
    _code, where = driver.dev()
    assert where["instruction"]["node"] == "feature_c_to_f"
    yield driver.work(where["instruction"])


def test_a_lock_left_by_a_killed_git_add_is_recovered_and_costs_no_attempt(
        repo: Path, driver: ScriptedDriver, cli: Cli, tmp_path: Path,
        feature_turn: dict) -> None:
    BlockedAdd(repo, tmp_path).kill()
    _code, out = driver.submit(feature_turn)
    assert (out.get("node"), out.get("attempt")) == ("feature_f_to_c", 1), out
    assert not (repo / ".git" / "index.lock").exists()
    assert git(repo, "log", "--format=%s").splitlines() == [
        "feat(dev): feature c_to_f - Celsius to Fahrenheit"]
    assert git(repo, "status", "--porcelain") == ""  # the index follows the commit


def test_a_live_gits_lock_is_not_taken_and_the_wait_costs_no_attempt(
        repo: Path, driver: ScriptedDriver, cli: Cli, tmp_path: Path, feature_turn: dict,
        monkeypatch: pytest.MonkeyPatch) -> None:
    waits = locks.WAIT_SECONDS
    monkeypatch.setattr(locks, "WAIT_SECONDS", 0.5)  # how long rein waits for the live git
    blocked = BlockedAdd(repo, tmp_path)
    try:
        code, out = driver.submit(feature_turn)
        assert blocked.process.poll() is None  # the git holding the lock was left alone
        assert blocked.lock.exists()
    finally:
        blocked.kill()
    assert (code, out["error"]["code"]) == (1, "DEV009"), out
    assert "not the agent's" in out["error"]["message"]
    assert git(repo, "log", "--oneline", check=False) == ""  # nothing committed meanwhile
    # The killed git's lock is stale once unchanged for a while: `rein dev`, waiting as
    # long as it does by default, continues the run, and the same attempt commits the
    # feature; the agent was never asked again.
    monkeypatch.setattr(locks, "WAIT_SECONDS", waits)
    code, where = driver.dev()
    assert any("resumed run" in n for n in where["notices"]), where
    assert (where["instruction"]["node"], where["instruction"]["attempt"]) == (
        "feature_f_to_c", 1), where
    c_to_f = next(f for f in where["features"] if f["id"] == "c_to_f")
    assert (c_to_f["status"], c_to_f["attempts"]) == ("succeeded", 1), c_to_f
    assert [i["node"] for i in driver.seen].count("feature_c_to_f") == 1
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
