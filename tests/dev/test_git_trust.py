"""rein's git runs nothing the repository's configuration names, and commits what it verified.

A feature node may write anywhere in the repository, `.git/` included. Here it plants, in
the middle of the flow, every way git has of running a program: a clean filter (which would
also change the bytes committed), hooks in `.git/hooks` and in `core.hooksPath`, an
fsmonitor hook, diff, textconv and merge drivers, a pager, editors, signing, a credential
helper, an ssh command, automatic gc, config-defined hooks, attributes from
`.git/info/attributes` and `core.attributesFile`, and an `include.path` that brings in more
of the same, and a `core.worktree` that names another directory. Every planted program
appends its name and the secret it can see to one file.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from devflow_support import Cli, approve, drive
from scripted import C_TO_F, C_TO_F_WRONG, ScriptedDriver, git, good_plan

from rein.dev import checks
from rein.dev import git as g
from rein.engine.run.criteria.model import CheckRequest

SECRET = "s3cret-token-value"
EVIL = """#!/bin/sh
echo "$0 $* secret=$REIN_SECRET_TOKEN" >> {marker}
exec sed s/212/999/
"""
HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-auto-gc",
         "post-checkout", "post-index-change", "reference-transaction", "post-rewrite",
         "fsmonitor-watchman")


def plant(repo: Path, tmp: Path) -> Path:
    """Everything a hostile node can put in `.git/` that git would run; the marker file."""
    marker = tmp / "ran.log"
    evil = tmp / "evil.sh"
    evil.write_text(EVIL.format(marker=marker))
    evil.chmod(0o755)
    hooks = tmp / "hooks"
    for folder in (hooks, repo / ".git" / "hooks"):
        folder.mkdir(parents=True, exist_ok=True)
        for name in HOOKS:
            (folder / name).write_text(EVIL.format(marker=marker))
            (folder / name).chmod(stat.S_IRWXU)
    attributes = "* filter=evil diff=evil merge=evil\n"
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text(attributes)
    (tmp / "attributes").write_text(attributes)
    elsewhere = tmp / "elsewhere"  # core.worktree: a work tree rein must not read
    elsewhere.mkdir()
    (elsewhere / "planted.txt").write_text("not the verified tree\n")
    included = tmp / "included.cfg"
    included.write_text(f'[filter "evil2"]\n\tclean = {evil} included-clean\n'
                        f'[core]\n\tpager = {evil} included-pager\n')
    config = {
        "filter.evil.clean": f"{evil} clean", "filter.evil.smudge": f"{evil} smudge",
        "filter.evil.required": "true",
        "diff.evil.textconv": f"{evil} textconv", "diff.evil.command": f"{evil} diff-driver",
        "merge.evil.driver": f"{evil} merge-driver", "diff.external": f"{evil} external",
        "core.hooksPath": str(hooks), "core.fsmonitor": f"{evil}",
        "core.attributesFile": str(tmp / "attributes"), "core.pager": f"{evil} pager",
        "pager.log": f"{evil} pager-log", "core.editor": f"{evil} editor",
        "sequence.editor": f"{evil} sequence-editor", "gpg.program": f"{evil} gpg",
        "commit.gpgSign": "true", "log.showSignature": "true", "core.sshCommand": f"{evil} ssh",
        "credential.helper": f"!{evil} credential", "core.askPass": f"{evil} askpass",
        "gc.auto": "1", "gc.autoDetach": "false", "hook.evil.command": f"{evil} config-hook",
        "hook.evil.event": "reference-transaction", "include.path": str(included),
        "core.worktree": str(elsewhere),
    }
    for key, value in config.items():
        git(repo, "config", key, value)
    return marker


def plumbing(repo: Path, *args: str) -> bytes:
    """What a git command that runs nothing prints (``cat-file``, ``ls-tree``)."""
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout


def blob(repo: Path, path: str) -> bytes:
    """The committed bytes of ``path`` at HEAD."""
    return plumbing(repo, "cat-file", "blob", f"HEAD:{path}")


def test_rein_runs_nothing_the_repository_configures_and_commits_the_verified_bytes(
        repo: Path, driver: ScriptedDriver, cli: Cli, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REIN_SECRET_TOKEN", SECRET)
    driver.bad_plan_first = False
    _code, where = driver.dev()
    _code, pending = driver.submit(driver.work(where["instruction"]))
    assert pending.get("for") == "approval", pending
    approve(cli)
    # The feature node's work starts here: it plants the configuration, then the flow goes on.
    marker = plant(repo, tmp_path)
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    assert not marker.exists(), marker.read_text()
    # Each file is committed byte for byte as rein verified it (the clean filter would have
    # turned 212 into 999), and the tree is clean for rein afterwards.
    for path in ("tempconv/__init__.py", "tests/test_c_to_f.py", "tests/test_table.py"):
        assert blob(repo, path) == (repo / path).read_bytes()
    assert b"212" in blob(repo, "tests/test_c_to_f.py")
    listed = plumbing(repo, "ls-tree", "-r", "--name-only", "HEAD").decode().split()
    assert "planted.txt" not in listed and "tempconv/table.py" in listed
    subjects = [i["node"] for i in driver.seen]
    assert subjects.count("feature_c_to_f") == 2  # the wrong first try and its repair only


def _request(repo: Path, name: str, attempt: int,
             verify: tuple[str, ...] = ("-c", "import tempconv")) -> CheckRequest:
    return CheckRequest(name=name, workspace=repo, node_id="feature_c_to_f", attempt=attempt,
                        outputs={}, params={
                            "plan_id": "20261208000000-abcdef", "feature": "c_to_f",
                            "title": "Celsius to Fahrenheit", "target": ".",
                            "verify": [sys.executable, *verify], "timeout_seconds": 60})


def test_only_the_tree_verify_passed_on_is_committed_whatever_the_workspace_says(
        repo: Path) -> None:
    """Between verify and the commit, a process the agent left running (or the feature's
    own test, which verify runs) changes the code and records the changed tree where rein
    kept, in the workspace, the tree verify passed on. The commit must not take it."""
    (repo / "tempconv").mkdir()
    (repo / "tempconv" / "__init__.py").write_text(C_TO_F)
    verified = asyncio.run(checks.verify(_request(repo, "rein.dev.verify", 1)))
    assert verified.passed, verified.evidence
    with (repo / "tempconv" / "__init__.py").open("a") as module:
        module.write("UNVERIFIED = True\n")
    tree = g.Repo(repo).write_tree(g.Repo(repo).snapshot())
    marker = repo / ".rein" / "dev" / "verified" / "c_to_f.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"attempt": 1, "tree": tree}))
    result = checks.handoff(_request(repo, "rein.dev.handoff", 1))
    assert not result.passed and "not the one this attempt verified" in str(result.evidence)
    assert git(repo, "log", "--format=%s", check=False) == ""  # nothing committed
    # Verified again as it now is, the same tree is committed.
    assert asyncio.run(checks.verify(_request(repo, "rein.dev.verify", 2))).passed
    assert checks.handoff(_request(repo, "rein.dev.handoff", 2)).passed
    assert b"UNVERIFIED" in blob(repo, "tempconv/__init__.py")


def test_a_commit_that_only_says_it_is_the_feature_is_not_taken_for_it(repo: Path) -> None:
    """While the person's approval of the plan waits, no instruction is out: the agent
    commits code that fails the feature's verify, with the feature's Rein-Dev-Feature line,
    and leaves code that passes in the work tree. rein verifies the work tree; the handoff
    must not then report the feature committed as that commit, whose tree never passed."""
    check = ("-c", "from tempconv import c_to_f; assert c_to_f(100) == 212")
    (repo / "tempconv").mkdir()
    (repo / "tempconv" / "__init__.py").write_text(C_TO_F_WRONG)
    git(repo, "add", "tempconv")
    git(repo, "-c", "user.name=a", "-c", "user.email=a@example.org", "commit", "-q", "-m",
        "feat(dev): feature c_to_f\n\nRein-Dev-Feature: 20261208000000-abcdef/c_to_f")
    forged = git(repo, "rev-parse", "--short", "HEAD").strip()
    (repo / "tempconv" / "__init__.py").write_text(C_TO_F)
    verified = asyncio.run(checks.verify(_request(repo, "rein.dev.verify", 1, check)))
    assert verified.passed, verified.evidence
    result = checks.handoff(_request(repo, "rein.dev.handoff", 1, check))
    assert not result.passed, result.evidence
    assert str(result.evidence).startswith(
        f"commit {forged} says it is feature c_to_f (its Rein-Dev-Feature line), but it is "
        "not a commit of the tree this attempt verified; nothing was committed")
    assert git(repo, "rev-parse", "--short", "HEAD").strip() == forged
    # The work tree committed as it is, by the agent, is the tree verify passed on: taken.
    git(repo, "add", "tempconv", "specs")
    git(repo, "-c", "user.name=a", "-c", "user.email=a@example.org", "commit", "-qm",
        "feat(dev): feature c_to_f\n\nRein-Dev-Feature: 20261208000000-abcdef/c_to_f")
    assert asyncio.run(checks.verify(_request(repo, "rein.dev.verify", 2, check))).passed
    result = checks.handoff(_request(repo, "rein.dev.handoff", 2, check))
    assert result.passed and "is committed as" in str(result.evidence), result.evidence


def test_a_commit_planted_among_those_kept_back_is_not_written_into_git(
        repo: Path, cli: Cli) -> None:
    """Where the agent's sandbox keeps `.git` read-only, rein keeps each feature's commit
    in `.rein/dev/git`, a workspace folder the agent can still write, and `rein dev` run
    outside the sandbox writes them into `.git`. A commit the agent made there itself,
    with the flow's Rein-Dev-Feature line, must not be written in as one of rein's."""
    plan = good_plan()
    plan["features"] = plan["features"][:1]
    driver = ScriptedDriver(repo, cli, bad_plan_first=False, wrong_first=False, plan=plan)
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    head = git(repo, "rev-parse", "HEAD").strip()
    kept = repo / ".rein" / "dev" / "git"
    env = {"GIT_OBJECT_DIRECTORY": str(kept / "objects"),
           "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / ".git" / "objects"),
           "GIT_INDEX_FILE": str(kept / "index"), "GIT_AUTHOR_NAME": "rein dev",
           "GIT_AUTHOR_EMAIL": "rein-dev@localhost", "GIT_COMMITTER_NAME": "rein dev",
           "GIT_COMMITTER_EMAIL": "rein-dev@localhost"}
    (kept / "objects").mkdir(parents=True)

    def planted(*args: str, data: str | None = None) -> str:
        return subprocess.run(["git", *args], cwd=repo, env={**os.environ, **env},
                              input=data, capture_output=True, text=True,
                              check=True).stdout.strip()

    planted("read-tree", head)
    blob = planted("hash-object", "-w", "--stdin", data="import os\nos.system('id')\n")
    planted("update-index", "--add", "--cacheinfo", f"100644,{blob},tempconv/extra.py")
    commit = planted("commit-tree", planted("write-tree"), "-p", head, data=(
        f"feat(dev): feature c_to_f - tidy\n\nRein-Dev-Feature: {where['plan_id']}/c_to_f\n"))
    (kept / "HEAD").write_text(f"{commit} {head}\n")
    code, out = cli.json("dev")
    assert code == 1 and out["error"]["code"] == "DEV009", out
    assert out["error"]["message"].startswith(
        f"rein could not write the feature commits it kept back into .git: commit {commit} "
        "in .rein/dev/git is not one rein recorded making for this flow")
    assert git(repo, "rev-parse", "HEAD").strip() == head
