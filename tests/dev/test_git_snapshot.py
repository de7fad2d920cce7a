"""rein's own reading of the work tree builds the tree `git add -A` would, without git's help.

The differential oracle is git itself in a repository with no filter or attribute: the tree
rein writes from its snapshot must be the one `git add -A` + `git write-tree` writes in a
throwaway index. What git would not record (a FIFO, a file beyond a symlinked directory)
rein does not read.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from rein.dev.git import NotCommittable, Repo


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})}).stdout


def gits_tree(root: Path, tmp: Path) -> str:
    index = {"GIT_INDEX_FILE": str(tmp / "oracle-index")}
    git(root, "add", "-A", "--", ".", ":(exclude).rein", env=index)
    return git(root, "write-tree", env=index).strip()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("one\r\ntwo\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "sub" / "deep" / "b.bin").write_bytes(bytes(range(256)))
    (root / "sub" / "link").symlink_to("deep/b.bin")
    (root / "dangling").symlink_to("/nowhere/at/all")
    (root / "odd \"name\"\twith\nnewline").write_text("odd\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / "skip.log").write_text("ignored\n")
    (root / ".rein").mkdir()
    (root / ".rein" / "state").write_text("rein's own\n")
    return root


def test_the_snapshot_tree_is_the_tree_git_add_writes(root: Path, tmp_path: Path) -> None:
    repo = Repo(root)
    assert repo.write_tree(repo.snapshot()) == gits_tree(root, tmp_path)
    assert repo.ignored("skip.log") and not repo.ignored("a.txt")  # progress.txt's test
    # After a commit: a change, a deletion, an added file, a tracked file made a symlink.
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    (root / "a.txt").write_text("changed\n")
    (root / "run.sh").unlink()
    (root / "new.txt").write_text("new\n")
    (root / "sub" / "deep" / "b.bin").unlink()
    (root / "sub" / "deep" / "b.bin").symlink_to("../../a.txt")
    snap = repo.snapshot()
    assert repo.write_tree(snap) == gits_tree(root, tmp_path)
    assert snap.changed(repo.tree_entries(repo.head()), exclude=(".rein",)) == [
        "a.txt", "new.txt", "run.sh", "sub/deep/b.bin"]


def test_what_git_would_not_record_is_not_read(root: Path, tmp_path: Path) -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    os.mkfifo(root / "pipe")  # reading it would block forever
    # A tracked directory replaced by a symlink to one outside: its files are gone for git,
    # and never read through the link.
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "b.bin").write_text("secret outside the repository\n")
    os.rename(root / "sub", tmp_path / "moved")
    (root / "sub").symlink_to(outside)
    repo = Repo(root)
    snap = repo.snapshot()
    assert "pipe" not in snap.entries and "sub/deep/b.bin" not in snap.entries
    assert snap.entries["sub"][0] == "120000"  # the symlink itself is recorded
    (root / "pipe").unlink()
    assert repo.write_tree(snap) == gits_tree(root, tmp_path)


def test_an_embedded_repository_is_the_agents_to_resolve(root: Path) -> None:
    git(root / "sub", "init", "-q")
    with pytest.raises(NotCommittable, match="sub/ holds its own git repository"):
        Repo(root).snapshot()


@pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")
def test_a_device_an_agents_sandbox_binds_over_a_file_is_not_read(root: Path,
                                                                    tmp_path: Path) -> None:
    # Claude Code's sandbox binds /dev/null over the dotfiles it protects (.bashrc...),
    # where opening it may be refused: rein reads the tree as git records it, without it.
    import json
    import sys

    expected = gits_tree(root, tmp_path)
    code = ("import json, sys; from pathlib import Path; from rein.dev.git import Repo; "
            "r = Repo(Path(sys.argv[1])); print(json.dumps(r.write_tree(r.snapshot())))")
    done = subprocess.run(
        ["/usr/bin/bwrap", "--dev-bind", "/", "/", "--bind", "/dev/null",
         str(root / ".bashrc"), "--bind", "/dev/null", str(root / ".vscode"),
         sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=False)
    for name in (".bashrc", ".vscode"):  # bubblewrap leaves the empty mount points behind
        (root / name).unlink()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected


def test_an_untracked_bytecode_cache_is_not_the_work(root: Path, tmp_path: Path) -> None:
    """Python writes ``__pycache__/`` wherever the agent ran its tests; a new project has
    no .gitignore yet, and rein committed the caches with the feature. A tracked one (a
    repository that chose to keep one) stays as it is."""
    for folder in (root / "__pycache__", root / "sub" / "__pycache__"):
        folder.mkdir()
        (folder / "m.cpython-311.pyc").write_bytes(b"\x00cache")
    (root / "not__pycache__").mkdir()
    (root / "not__pycache__" / "kept.txt").write_text("work\n")
    repo = Repo(root)
    entries = repo.snapshot().entries
    assert not [p for p in entries if "__pycache__/" in p and not p.startswith("not")]
    assert "not__pycache__/kept.txt" in entries
    git(root, "add", "-f", "sub/__pycache__/m.cpython-311.pyc")
    assert "sub/__pycache__/m.cpython-311.pyc" in repo.snapshot().entries
    assert "__pycache__/m.cpython-311.pyc" not in repo.snapshot().entries
