"""`rein dev` inside a sandbox that keeps `.git` read-only (the Codex CLI's default).

rein's checks run in the submitting process, inside the agent's sandbox: there the
handoff builds each feature's commit in `.rein/dev/git` (objects and the branch tip), each
on the one before, and the first `rein dev` that may write `.git` writes them in. Each
object is checked against its name, each commit must be the flow's, and HEAD moves only
from where it was. The sandbox here is bubblewrap with `.git` bound read-only, as Codex's.
"""

from __future__ import annotations

import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from devflow_support import Cli, approve
from scripted import ScriptedDriver, git

BWRAP = Path("/usr/bin/bwrap")
pytestmark = pytest.mark.skipif(not BWRAP.exists(), reason="bubblewrap is not installed")
REIN = [sys.executable, "-m", "rein"]


def sandboxed(repo: Path):  # type: ignore[no-untyped-def]
    """rein as the agent runs it: .git read-only, everything else as it is."""

    def rein(*args: str) -> tuple[int, str]:
        done = subprocess.run([str(BWRAP), "--dev-bind", "/", "/", "--ro-bind",
                               str(repo / ".git"), str(repo / ".git"), *REIN, *args],
                              cwd=repo, capture_output=True, text=True, timeout=300,
                              check=False)
        return done.returncode, done.stdout

    return rein


def build_in_the_sandbox(repo: Path, cli: Cli) -> ScriptedDriver:
    """The plan outside (a person approves it), the three features inside the sandbox."""
    driver = ScriptedDriver(repo, cli, bad_plan_first=False, wrong_first=True)
    code, where = driver.dev()
    _code, _ = driver.submit(driver.work(where["instruction"]))
    approve(cli)
    driver.rein = sandboxed(repo)
    code, where = driver.dev()
    while where["reason"] == "waiting":
        pending = where["instruction"]
        assert pending["status"] == "instruction", where
        code, pending = driver.submit(driver.work(pending))
        code, where = driver.dev()
    assert (code, where["reason"]) == (0, "done"), where
    assert any("3 feature commit(s) wait in .rein/dev/git" in n for n in where["notices"])
    return driver


def test_commits_kept_back_by_a_read_only_git_are_written_in_outside(
        repo: Path, cli: Cli) -> None:
    driver = build_in_the_sandbox(repo, cli)
    turns = [(i["node"], i["attempt"]) for i in driver.seen]
    # The wrong c_to_f still failed rein's own verify, inside the sandbox.
    assert turns[1:] == [("feature_c_to_f", 1), ("feature_c_to_f", 2),
                         ("feature_f_to_c", 1), ("feature_table", 1)]
    assert git(repo, "log", "--format=%s", check=False) == ""  # nothing in .git yet
    code, where = cli.json("dev")  # the person, outside the sandbox
    assert code == 0 and where["reason"] == "done"
    assert where["notices"][0].startswith("wrote 3 feature commit(s) into .git")
    assert git(repo, "log", "--format=%s").splitlines() == [
        "feat(dev): feature table - A conversion table",
        "feat(dev): feature f_to_c - Fahrenheit to Celsius",
        "feat(dev): feature c_to_f - Celsius to Fahrenheit"]
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / ".rein" / "dev" / "git").exists()
    assert "c * 9 / 5 + 32" in git(repo, "show", "HEAD:tempconv/__init__.py")


def test_an_object_changed_while_kept_back_is_not_written_in(repo: Path, cli: Cli) -> None:
    build_in_the_sandbox(repo, cli)
    objects = repo / ".rein" / "dev" / "git" / "objects"
    victim = next(p for p in sorted(objects.glob("??/*")))
    victim.chmod(0o644)
    victim.write_bytes(zlib.compress(b"blob 6\0forged"))
    code, out = cli.json("dev")
    assert code == 1 and out["error"]["code"] == "DEV009"
    assert "does not hold what its name says" in out["error"]["message"]
    assert git(repo, "log", "--format=%s", check=False) == ""


def test_a_head_that_moved_meanwhile_is_not_overwritten(repo: Path, cli: Cli) -> None:
    build_in_the_sandbox(repo, cli)
    git(repo, "-c", "user.name=p", "-c", "user.email=p@example.org", "commit", "-q",
        "--allow-empty", "-m", "someone else's")
    code, out = cli.json("dev")
    assert code == 1 and out["error"]["code"] == "DEV009"
    assert "HEAD moved" in out["error"]["message"]
    assert git(repo, "log", "--format=%s").splitlines() == ["someone else's"]
    assert (repo / ".rein" / "dev" / "git" / "HEAD").exists()  # kept, not lost
