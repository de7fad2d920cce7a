"""The workspace as an attempt needs it: its resolved path and git HEAD.

Attempts that read or write the workspace are queued per tree (path + HEAD), and a worker
checks its own tree again just before it runs one, so this is read once per attempt: it
stats the files that move HEAD and asks ``git`` only when one of them changed.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from pathlib import Path

# path -> (stamp of the files that say where HEAD points, HEAD)
_HEADS: dict[str, tuple[tuple[int, ...], str]] = {}


def tree_of(workspace: Path) -> dict[str, str]:
    """``{"workspace": resolved path, "head": git HEAD or "" outside git}``."""
    path = str(workspace.resolve())
    stamp = _ref_stamp(Path(path))
    cached = _HEADS.get(path)
    if cached is not None and stamp is not None and cached[0] == stamp:
        return {"workspace": path, "head": cached[1]}
    if stamp == ():  # no .git here or above: not a repository, nothing to ask git
        head = ""
    else:
        try:
            head = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"],
                                  capture_output=True, text=True, timeout=10,
                                  check=False).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            head = ""
    if stamp is not None:
        _HEADS[path] = (stamp, head)
    return {"workspace": path, "head": head}


def _ref_stamp(root: Path) -> tuple[int, ...] | None:
    """When the files that say where HEAD points last changed: ``()`` when no directory
    from ``root`` up holds a ``.git`` (a plain tree), ``None`` when the repository is not a
    plain ``.git`` directory in ``root`` (a worktree, a parent's repository: git is asked)."""
    git = root / ".git"
    try:
        if not git.exists():
            if any((p / ".git").exists() for p in root.parents):
                return None
            return ()
        if not git.is_dir():
            return None
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        files = [git / "HEAD", git / "packed-refs"]
        if head.startswith("ref: "):
            files.append(git / head[5:])
        return tuple(f.stat().st_mtime_ns if f.exists() else 0 for f in files) + (
            hash(head),)
    except OSError:
        return None


def tree_problem(workspace: Path, executor_id: str, placement: Mapping[str, str]
                 ) -> str | None:
    """Why worker ``executor_id`` with ``workspace`` must not run what was placed at
    ``placement`` (path, HEAD, access), or ``None``."""
    if placement.get("access") == "none":
        return None
    mine = tree_of(workspace)
    if mine["workspace"] != placement.get("workspace"):
        return (f"worker {executor_id} has workspace {mine['workspace']}, the attempt "
                f"needs {placement.get('workspace')}")
    if mine["head"] != placement.get("head"):
        return (f"worker {executor_id} is at HEAD {mine['head'] or '(none)'}, the "
                f"attempt needs {placement.get('head') or '(none)'}")
    return None


def tree_queue(base: str, tree: Mapping[str, str]) -> str:
    """The queue of the attempts that need ``tree``: ``<base>@<digest of path and HEAD>``."""
    digest = hashlib.sha256(f"{tree['workspace']}\0{tree['head']}".encode()).hexdigest()
    return f"{base}@{digest[:16]}"


__all__ = ["tree_of", "tree_problem", "tree_queue"]
