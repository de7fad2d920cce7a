"""Git as the development flow uses it: read the tree, commit a feature, never run a hook.

Every call disables hooks by pointing ``core.hooksPath`` at a fresh, empty directory that
only this process can write (``mkdtemp``: mode 0700, a name nobody can guess), removed
afterwards; a fixed shared directory would let anyone on the machine, or the supervised
agent, plant a hook there. Credential helpers, pagers, signing and the system
configuration are off too: the flow's git calls never prompt, sign or reach a network.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

# Paths of the repository that are not the driver's work: rein's state, the briefs, and the
# file rein appends to itself. A feature whose change is only these is an empty change.
NOT_WORK = (".rein", "specs", "progress.txt")
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class GitFailed(Exception):
    """A git command failed; the message holds its output."""


@contextlib.contextmanager
def private_hooks() -> Iterator[str]:
    """An empty hooks directory of this process alone, for the length of the block."""
    path = tempfile.mkdtemp(prefix="rein-dev-nohooks-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def git(repo: Path, *args: str, hooks: str, env: Mapping[str, str] | None = None,
        check: bool = True) -> str:
    """Run one git command in ``repo`` with hooks, helpers and prompts off; its stdout."""
    child = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    child.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
                  "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    child.update(env or {})
    argv = ["git", "-c", f"core.hooksPath={hooks}", "-c", "credential.helper=",
            "-c", "core.pager=cat", "-c", "commit.gpgsign=false", "-c", "core.fsmonitor=false",
            *args]
    done = subprocess.run(argv, cwd=repo, env=child, capture_output=True, text=True,
                          timeout=60, check=False)
    if check and done.returncode != 0:
        raise GitFailed(f"git {' '.join(args)} failed ({done.returncode}): "
                        f"{(done.stderr or done.stdout).strip()[:800]}")
    return done.stdout


def toplevel(path: Path) -> Path | None:
    """The root of the git repository holding ``path``, or None outside one."""
    with private_hooks() as hooks:
        try:
            return Path(git(path, "rev-parse", "--show-toplevel", hooks=hooks).strip())
        except (GitFailed, OSError):
            return None


def has_head(repo: Path, hooks: str) -> bool:
    return git(repo, "rev-parse", "--verify", "-q", "HEAD", hooks=hooks, check=False) != ""


def changed_paths(repo: Path, hooks: str, exclude: Sequence[str] = NOT_WORK) -> list[str]:
    """Paths that differ from HEAD (or exist, without a commit), outside ``exclude``."""
    spec = [".", *(f":(exclude){p}" for p in exclude)]
    out = git(repo, "status", "--porcelain", "--untracked-files=all", "--", *spec,
              hooks=hooks)
    return [line[3:] for line in out.splitlines() if line.strip()]


def tree_of_worktree(repo: Path, hooks: str) -> str:
    """The git tree id of the working tree as it is (untracked files included, ``.rein``
    left out), through a throwaway index: a fingerprint of exactly what was verified."""
    with tempfile.TemporaryDirectory(prefix="rein-dev-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(repo, "add", "-A", "--", ".", ":(exclude).rein", hooks=hooks, env=env)
        return git(repo, "write-tree", hooks=hooks, env=env).strip()


def head_tree(repo: Path, hooks: str) -> str:
    if not has_head(repo, hooks):
        return _EMPTY_TREE
    return git(repo, "rev-parse", "HEAD^{tree}", hooks=hooks).strip()


def committed(repo: Path, hooks: str, plan_id: str, feature: str) -> str | None:
    """The commit that completed ``feature`` of plan ``plan_id``, if one exists."""
    if not has_head(repo, hooks):
        return None
    out = git(repo, "log", "--format=%h%x09%B%x00", hooks=hooks)
    mark = f"Rein-Dev-Feature: {plan_id}/{feature}"
    for entry in out.split("\0"):
        sha, _, body = entry.strip().partition("\t")
        if mark in body.splitlines():
            return sha
    return None


def identity_args(repo: Path, hooks: str) -> list[str]:
    """``-c user.*`` for a repository without an identity, so that a fresh ``git init``
    works; a configured identity is kept."""
    name = git(repo, "config", "user.name", hooks=hooks, check=False).strip()
    email = git(repo, "config", "user.email", hooks=hooks, check=False).strip()
    out: list[str] = []
    if not name:
        out += ["-c", "user.name=rein dev"]
    if not email:
        out += ["-c", "user.email=rein-dev@localhost"]
    return out
