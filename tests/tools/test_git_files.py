"""The refs read from a repository's files are what ``git show-ref --head`` lists, in every
layout the guard meets; one only git reads is left to git; and an attempt's snapshot
starts no process where the files say it all."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rein.tools import gitguard
from rein.tools.git_files import Unreadable, read_refs
from rein.tools.gitguard import git_refs, refs_now

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
       "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
       "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "HOME": os.devnull}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True, env={"PATH": os.environ["PATH"], **ENV})
    return done.stdout.strip()


@pytest.fixture(name="repo")
def repo_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root


def commit(root: Path, text: str) -> None:
    (root / "f.txt").write_text(text)
    git(root, "add", "f.txt")
    git(root, "commit", "-q", "-m", text)


def test_an_unborn_branch_has_no_refs(repo: Path) -> None:
    assert read_refs(repo) == git_refs(repo) == {}


def test_loose_packed_symbolic_and_detached_refs_read_as_git_lists_them(repo: Path) -> None:
    commit(repo, "one")
    git(repo, "tag", "-a", "v1", "-m", "first")  # an annotated tag: packed, then peeled
    git(repo, "branch", "side")
    git(repo, "pack-refs", "--all")
    commit(repo, "two")  # main is loose again, over its packed line
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    expected = git_refs(repo)
    assert expected is not None and {"HEAD", "refs/heads/main", "refs/heads/side",
                                     "refs/tags/v1", "refs/remotes/origin/HEAD"} <= set(expected)
    assert read_refs(repo) == expected
    git(repo, "checkout", "-q", "--detach", "side")
    assert read_refs(repo) == git_refs(repo)


def test_a_subfolder_and_a_linked_worktree_read_their_repository(repo: Path,
                                                                 tmp_path: Path) -> None:
    commit(repo, "one")
    (repo / "sub").mkdir()
    assert read_refs(repo / "sub") == git_refs(repo / "sub") == git_refs(repo)
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    commit(linked, "on feature")
    assert read_refs(linked) == git_refs(linked)
    assert read_refs(linked) != read_refs(repo)  # its own HEAD


def test_outside_a_repository_there_are_none(tmp_path: Path) -> None:
    assert read_refs(tmp_path) is None


def test_a_repository_only_git_reads_is_left_to_git(repo: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    commit(repo, "one")
    with pytest.raises(Unreadable):
        read_refs(repo, env={"GIT_DIR": str(repo / ".git")})
    (repo / ".git" / "reftable").mkdir()
    with pytest.raises(Unreadable):
        read_refs(repo)
    (repo / ".git" / "reftable").rmdir()
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    assert asyncio.run(refs_now(repo)) == git_refs(repo)  # git asked, awaited


def test_a_snapshot_starts_no_process_where_the_files_say_it_all(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted: no process is started on the event loop for an attempt's git refs."""
    commit(repo, "one")
    started: list[Any] = []
    real = asyncio.create_subprocess_exec

    async def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    def run(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return subprocess.CompletedProcess(args, 128, "", "")

    monkeypatch.setattr(asyncio, "create_subprocess_exec", counting)
    monkeypatch.setattr(gitguard.subprocess, "run", run)
    before = asyncio.run(refs_now(repo))
    assert started == []
    assert before is not None and set(before) == {"HEAD", "refs/heads/main"}
