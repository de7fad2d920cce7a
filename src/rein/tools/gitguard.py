"""Workers never commit: a record of git refs before an attempt, compared after it.

Bubblewrap binds ``.git`` read-only, so under it a commit simply fails. Without bubblewrap
(or for a CLI agent with its own ways), rein still notices: every ref and ``HEAD`` are read
with ``git show-ref --head`` before the worker starts and again when it ends, and any ref
that appeared, vanished or moved fails the attempt as ``permission_denied``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping


def git_refs(workspace: str | os.PathLike[str]) -> dict[str, str] | None:
    """Every ref and HEAD → commit, or None when the workspace is not a git repository."""
    try:
        done = subprocess.run(
            ["git", "show-ref", "--head"],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode not in (0, 1) or "not a git repository" in done.stderr:
        return None
    refs: dict[str, str] = {}
    for line in done.stdout.splitlines():
        sha, _, ref = line.partition(" ")
        refs[ref] = sha
    return refs


def moved_refs(before: Mapping[str, str] | None, after: Mapping[str, str] | None) -> list[str]:
    """The refs that appeared, vanished or moved."""
    if before is None or after is None:
        return []
    return sorted(r for r in set(before) | set(after) if before.get(r) != after.get(r))
