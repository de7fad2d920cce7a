"""What a driver wrote: the workspace before an instruction, compared with it after.

The driver uses its own tools, so rein cannot refuse a write as it happens. What it can do
is look afterwards. When the instruction is issued, :func:`snapshot` records ``HEAD`` and a
digest of every path ``git status`` reports as changed or untracked; when the envelope
arrives, a second snapshot is compared with the first (:func:`written_paths`) and every path
that changed is checked against the node's ``fs:write`` grants (:func:`writes_outside`).

This is detection after the fact, weaker than the model worker's refusal before the fact:
a file the repository ignores (``.gitignore``) is invisible to ``git status``, and outside
a git repository nothing is checked at all (the snapshot says so and rein reports it).
rein's own state directory ``.rein/`` is never counted as node work.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

STATE_PREFIX = ".rein/"
_WRITE_ACTIONS = ("write", "create", "delete")  # fs actions that may change a path
_MAX_HASH_BYTES = 64 * 1024 * 1024  # larger files are compared by size and mtime only


def _git(workspace: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(
            ["git", "-c", "core.quotePath=false", *args], cwd=workspace,
            capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def _digest(path: Path) -> str:
    try:
        info = path.lstat()
    except OSError:
        return "absent"
    if path.is_symlink():
        return "link:" + str(path.readlink())
    if not path.is_file():
        return "other"
    if info.st_size > _MAX_HASH_BYTES:
        return f"size:{info.st_size}:{info.st_mtime_ns}"
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def snapshot(workspace: str | Path) -> dict[str, Any]:
    """``{"git": bool, "head": sha | None, "paths": {path: digest}}`` for ``workspace``.

    ``paths`` holds every changed, deleted or untracked path that ``git status`` reports
    (relative, POSIX), except rein's own ``.rein/``.
    """
    root = Path(workspace)
    top = _git(root, "rev-parse", "--show-prefix")
    if top is None or top.returncode != 0:
        return {"git": False, "head": None, "paths": {}}
    prefix = top.stdout.decode().strip()
    head = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    status = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
    if status is None or status.returncode != 0:
        return {"git": False, "head": None, "paths": {}}
    paths: dict[str, str] = {}
    entries = status.stdout.decode("utf-8", "surrogateescape").split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        code, name = entry[:2], entry[3:]
        if "R" in code or "C" in code:
            i += 1  # the rename's source follows; the target is what exists now
        rel = name[len(prefix):] if prefix and name.startswith(prefix) else name
        if rel.startswith(STATE_PREFIX) or rel == ".rein":
            continue
        paths[rel] = _digest(root / rel)
    sha = head.stdout.decode().strip() if head is not None and head.returncode == 0 else None
    return {"git": True, "head": sha, "paths": paths}


def written_paths(workspace: str | Path, before: Mapping[str, Any], after: Mapping[str, Any]
                  ) -> list[str]:
    """Paths whose content changed between two snapshots (commits in between included)."""
    old: Mapping[str, str] = before.get("paths") or {}
    new: Mapping[str, str] = after.get("paths") or {}
    changed = {p for p in set(old) | set(new) if old.get(p) != new.get(p)}
    if before.get("git") and after.get("git") and before.get("head") != after.get("head"):
        # A commit hides work from `git status`: ask git what the new commits touched.
        root = Path(workspace)
        if before.get("head") and after.get("head"):
            done = _git(root, "diff", "--name-only", "-z", "--relative",
                        str(before["head"]), str(after["head"]))
            if done is not None and done.returncode == 0:
                changed.update(p for p in done.stdout.decode().split("\0") if p)
        elif after.get("head"):
            done = _git(root, "ls-tree", "-r", "--name-only", "-z",
                        str(after["head"]))
            if done is not None and done.returncode == 0:
                changed.update(p for p in done.stdout.decode().split("\0") if p)
    return sorted(p for p in changed if not p.startswith(STATE_PREFIX))


def write_grants(permissions: Iterable[str]) -> list[str]:
    """The path patterns a node may change: targets of ``fs:write`` / ``fs:create`` /
    ``fs:delete`` grants (``**`` for a grant without a target)."""
    out: list[str] = []
    for text in permissions:
        parts = str(text).split(":", 2)
        if len(parts) >= 2 and parts[0] == "fs" and parts[1] in _WRITE_ACTIONS:
            out.append(parts[2] if len(parts) == 3 and parts[2] else "**")
    return out


def writes_outside(paths: Sequence[str], permissions: Iterable[str]) -> list[str]:
    """The paths of ``paths`` that no ``fs:write`` grant of ``permissions`` covers."""
    from rein.tools.permissions import target_matches

    grants = write_grants(permissions)
    return [p for p in paths if not any(target_matches("fs", g, p) for g in grants)]


def head_moved(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether ``HEAD`` points somewhere else (the driver committed, reset or switched)."""
    return bool(before.get("git")) and before.get("head") != after.get("head")


def measure(workspace: str | Path, turn: Any, now: dt.datetime) -> dict[str, Any]:
    """What rein checks when an envelope for ``turn`` arrives (stored with the answer).

    Writes since the instruction was issued against the node's ``fs:write`` grants,
    ``HEAD`` moving, and the wall-clock time the instruction took against its limit.
    """
    instruction = turn.instruction
    baseline = turn.baseline
    permissions = list(instruction.get("permissions") or [])
    out: dict[str, Any] = {"git": bool(baseline.get("git"))}
    if baseline.get("git"):
        after = snapshot(workspace)
        written = written_paths(workspace, baseline, after)
        out["written"] = written[:200]
        out["writes_outside"] = writes_outside(written, permissions)
        out["head_moved"] = head_moved(baseline, after)
        out["commit_allowed"] = any(str(p).startswith("git:commit") for p in permissions)
    else:
        out["unchecked"] = ("the workspace is not a git repository: writes outside fs:write "
                            "were not checked")
    started = dt.datetime.fromisoformat(str(turn.created_at))
    elapsed = max(0.0, (now - started).total_seconds())
    limit = ((instruction.get("budget") or {}).get("enforced") or {}).get(
        "max_wall_clock_seconds")
    out["elapsed_seconds"] = round(elapsed, 3)
    if limit is not None:
        out["limit_seconds"] = limit
        out["timed_out"] = elapsed > float(limit)
    return out


__all__ = ["head_moved", "measure", "snapshot", "write_grants", "writes_outside", "written_paths"]
