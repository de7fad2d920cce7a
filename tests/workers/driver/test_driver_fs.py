"""The driver's write check reads the file system: what git hides, it still sees."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rein.workers.driver.fs import compare, snapshot, written_paths

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
    from rein.workers.driver import fs

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


# -- what an agent's own sandbox mounts over the workspace -------------------------------
#
# The Codex CLI runs every command in bubblewrap with empty read-only directories mounted
# over the workspace (.agents, .aws, .codex); they exist only inside that command. The
# snapshot here is taken inside such a namespace, as a sandboxed `rein submit` takes it.

BWRAP = "/usr/bin/bwrap"


def _bwrap_works() -> bool:
    if not Path(BWRAP).exists():
        return False
    done = subprocess.run([BWRAP, "--dev-bind", "/", "/", "true"], capture_output=True,
                          check=False)
    return done.returncode == 0


needs_bwrap = pytest.mark.skipif(not _bwrap_works(),
                                 reason="bubblewrap is missing or cannot make a namespace here")


def _snapshot_inside(root: Path, mounts: list[str], then: str = "") -> dict:  # type: ignore[type-arg]
    """A snapshot of ``root`` taken in a bubblewrap namespace where each of ``mounts`` is
    an empty read-only tmpfs, after running the shell line ``then`` there."""
    import json
    import sys

    args = [BWRAP, "--dev-bind", "/", "/"]
    for name in mounts:
        target = str(root / name)
        args += ["--tmpfs", target, "--remount-ro", target]
    code = ("import json, sys; from rein.workers.driver.fs import snapshot; "
            "print(json.dumps(snapshot(sys.argv[1])))")
    line = f"{then}\n" if then else ""
    done = subprocess.run([*args, "sh", "-c", f'{line}exec "$0" -c "$1" "$2"', sys.executable,
                           code, str(root)], capture_output=True, text=True, check=True)
    for name in mounts:  # bubblewrap leaves the empty mount point behind: not the agent's
        (root / name).rmdir()
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@needs_bwrap
def test_empty_directories_the_agents_sandbox_mounts_are_not_writes(repo: Path) -> None:
    before = snapshot(repo)
    after = _snapshot_inside(repo, [".agents", ".aws", ".codex"])
    checks = compare(before, after, PERMS)
    assert checks["written"] == [] and checks["writes_outside"] == []
    assert checks["ignored"]["sandbox_mounts"] == [".agents", ".aws", ".codex"]
    # And the other way round: an instruction issued inside the sandbox, answered outside.
    assert compare(after, snapshot(repo), PERMS)["writes_outside"] == []


@needs_bwrap
def test_what_is_written_inside_a_mount_is_still_a_write(repo: Path) -> None:
    before = snapshot(repo)
    # A writable mount this time, so that something can be put inside it.
    import json
    import sys

    target = str(repo / ".codex")
    code = ("import json, sys; from rein.workers.driver.fs import snapshot; "
            "print(json.dumps(snapshot(sys.argv[1])))")
    done = subprocess.run([BWRAP, "--dev-bind", "/", "/", "--tmpfs", target, "sh", "-c",
                           f'echo x > {target}/note && exec "$0" -c "$1" "$2"',
                           sys.executable, code, str(repo)],
                          capture_output=True, text=True, check=True)
    (repo / ".codex").rmdir()
    after = json.loads(done.stdout)
    assert compare(before, after, PERMS)["writes_outside"] == [".codex/note"]


def test_an_empty_directory_that_is_not_a_mount_is_a_write(repo: Path) -> None:
    before = snapshot(repo)
    (repo / ".codex").mkdir()
    checks = compare(before, snapshot(repo, previous=before), PERMS)
    assert checks["writes_outside"] == [".codex"]
    assert "sandbox_mounts" not in checks.get("ignored", {})


@needs_bwrap
def test_dev_null_bound_over_protected_files_is_not_a_write(repo: Path) -> None:
    # Claude Code's sandbox binds /dev/null over dotfiles it protects, existing or not.
    import json
    import sys

    names = [".bashrc", ".mcp.json", ".vscode", ".git/config.worktree"]
    args = [BWRAP, "--dev-bind", "/", "/"]
    for name in names:
        args += ["--bind", "/dev/null", str(repo / name)]
    code = ("import json, sys; from rein.workers.driver.fs import snapshot; "
            "print(json.dumps(snapshot(sys.argv[1])))")
    before = snapshot(repo)
    done = subprocess.run([*args, sys.executable, "-c", code, str(repo)],
                          capture_output=True, text=True, check=True)
    for name in names:  # bubblewrap leaves the mount points behind as empty files
        (repo / name).unlink()
    checks = compare(before, json.loads(done.stdout), PERMS)
    assert checks["writes_outside"] == [], checks
    assert checks["ignored"]["sandbox_mounts"] == sorted(names)


def test_the_refs_are_read_from_the_files_as_git_lists_them(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.tools import gitguard

    git(repo, "branch", "other")
    git(repo, "tag", "v1")
    git(repo, "pack-refs", "--all")
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "src" / "app.py").write_text("x = 2\n")
    git(repo, "commit", "-q", "-am", "two")
    listed = gitguard.git_refs(repo)
    assert listed is not None and {"HEAD", "refs/heads/topic", "refs/tags/v1"} <= set(listed)

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError("git was started")

    monkeypatch.setattr(gitguard.subprocess, "run", no_git)
    assert snapshot(repo)["refs"] == listed


def test_a_repository_the_files_cannot_say_is_asked_of_git(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.tools import gitguard

    listed = gitguard.git_refs(repo)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", "/nonexistent")  # only git reads it so
    asked: list[object] = []
    real = gitguard.subprocess.run

    def counted(*args: object, **kwargs: object) -> object:
        asked.append(args[0])
        return real(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(gitguard.subprocess, "run", counted)
    assert snapshot(repo)["refs"] == listed and asked == [gitguard.COMMAND]


def test_a_file_name_that_is_not_utf8_is_stored_and_its_change_seen(repo: Path) -> None:
    import json

    folder = os.fsencode(repo) + b"/src/d\xff"
    os.mkdir(folder)
    with open(folder + b"/f\xfe.txt", "wb") as fh:
        fh.write(b"one\n")
    before = snapshot(repo)
    json.dumps(before, ensure_ascii=False).encode("utf-8")  # what the store does with it
    assert "src/d\\xff/f\\xfe.txt" in before["entries"]
    with open(folder + b"/f\xfe.txt", "wb") as fh:
        fh.write(b"two\n")
    (repo / "config.toml").write_text("a = 2\n")
    assert outside(repo, before) == ["config.toml"]  # src/** may be written
    assert "src/d\\xff/f\\xfe.txt" in written_paths(before, snapshot(repo, previous=before))
