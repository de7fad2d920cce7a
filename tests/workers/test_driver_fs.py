"""The driver's write check reads the file system: what git hides, it still sees."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rein.workers.driver_fs import compare, snapshot, written_paths

PERMS = ["fs:read:**", "fs:write:src/**"]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   cwd=root, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("readme\n")
    (tmp_path / "config.toml").write_text("a = 1\n")
    (tmp_path / ".gitignore").write_text("build/\n*.log\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def outside(root: Path, before: dict) -> list[str]:  # type: ignore[type-arg]
    return compare(before, snapshot(root, previous=before), PERMS)["writes_outside"]


def test_a_staged_git_mv_is_seen(repo: Path) -> None:
    before = snapshot(repo)
    git(repo, "mv", "README.md", "src/README.md")
    assert outside(repo, before) == ["README.md"]  # the deletion is outside src/**


@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
def test_index_flags_do_not_hide_a_change(repo: Path, flag: str) -> None:
    git(repo, "update-index", flag, "config.toml")
    before = snapshot(repo)
    (repo / "config.toml").write_text("a = 2\n")
    assert outside(repo, before) == ["config.toml"]


def test_an_exclude_entry_and_ignored_files_do_not_hide_a_write(repo: Path) -> None:
    before = snapshot(repo)
    with (repo / ".git" / "info" / "exclude").open("a") as fh:
        fh.write("secret.txt\n")
    (repo / "secret.txt").write_text("hidden\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_bytes(b"\0")
    (repo / "run.log").write_text("log\n")
    assert outside(repo, before) == [".git/info/exclude", "build/out.bin", "run.log",
                                     "secret.txt"]


def test_a_workspace_outside_git_is_checked(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    before = snapshot(tmp_path)
    (tmp_path / "src" / "ok.py").write_text("")
    (tmp_path / "notes.txt").write_text("no\n")
    checks = compare(before, snapshot(tmp_path, previous=before), PERMS)
    assert checks["writes_outside"] == ["notes.txt"]
    assert checks["written"] == ["notes.txt", "src/ok.py"]
    assert "unchecked" not in checks


def test_a_branch_other_than_head_moving_is_a_ref_change(repo: Path) -> None:
    git(repo, "branch", "other")
    before = snapshot(repo)
    (repo / "src" / "app.py").write_text("x = 2\n")
    git(repo, "stash", "-q")  # writes refs/stash and restores the file
    git(repo, "branch", "-f", "other", "refs/stash")
    checks = compare(before, snapshot(repo, previous=before), PERMS)
    assert checks["head_moved"] is True
    assert {"refs/heads/other", "refs/stash"} <= set(checks["refs_moved"])
    assert checks["writes_outside"] == []


def test_hooks_and_git_config_are_writes_outside_fs_write(repo: Path) -> None:
    before = snapshot(repo)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ncurl evil\n")
    git(repo, "config", "core.fsmonitor", "true")
    git(repo, "status")  # read-only commands rewrite the index: not a write
    assert outside(repo, before) == [".git/config", ".git/hooks/pre-commit"]


def test_a_rewrite_with_the_same_size_and_mtime_is_seen(repo: Path) -> None:
    target = repo / "config.toml"
    info = target.stat()
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns - 10_000_000_000))
    info = target.stat()
    before = snapshot(repo)
    target.write_text("a = 9\n")  # same size
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))  # mtime put back
    assert outside(repo, before) == ["config.toml"]


def test_touching_a_file_without_changing_it_is_not_a_write(repo: Path) -> None:
    target = repo / "config.toml"
    before = snapshot(repo)
    os.utime(target, ns=(1, 1))
    target.write_text(target.read_text())
    assert written_paths(before, snapshot(repo, previous=before)) == []


def test_unchanged_files_are_not_read_again(repo: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    import rein.workers.driver_fs as fs

    # Files written just now are "racy" (hashed again whatever their stat says); only the
    # coarseness of a real clock needs that margin, so this test does without it.
    monkeypatch.setattr(fs, "RACY_NS", 0)
    for i in range(50):
        (repo / "src" / f"m{i}.py").write_text(f"v = {i}\n")
    first = snapshot(repo)
    (repo / "src" / "m7.py").write_text("v = 70\n")
    read: list[str] = []
    real = fs.file_sha256
    monkeypatch.setattr(fs, "file_sha256", lambda p: read.append(Path(p).name) or real(p))
    second = snapshot(repo, previous=first)
    assert "m7.py" in read and len([n for n in read if n.startswith("m")]) == 1
    assert written_paths(first, second) == ["src/m7.py"]


def test_tool_caches_are_set_aside_and_reported(repo: Path) -> None:
    before = snapshot(repo)
    (repo / "src" / "__pycache__").mkdir()
    (repo / "src" / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    (repo / ".pytest_cache" / "v").mkdir(parents=True)
    (repo / ".pytest_cache" / "v" / "lastfailed").write_text("{}")
    checks = compare(before, snapshot(repo, previous=before), PERMS)
    assert checks["writes_outside"] == [] and checks["written"] == []
    assert checks["ignored"]["tool_caches"] == 2
