"""Workers never commit: a record of git refs before an attempt, compared after it.

Bubblewrap binds ``.git`` read-only, so under it a commit simply fails. Without bubblewrap
(or for a CLI agent with its own ways), rein still notices: every ref and ``HEAD`` are read
with ``git show-ref --head`` before the worker starts and again when it ends, and any ref
that appeared, vanished or moved fails the attempt as ``permission_denied``. An attempt on
the event loop takes its snapshot with :func:`refs_now`: the refs read from the
repository's files (:mod:`rein.tools.git_files`), with no process started, or, for a
repository only git reads, ``git`` awaited; either way the loop is never held while the
turns of other threads wait.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Mapping

from rein.core.loops import within
from rein.tools.git_files import Unreadable, read_refs

COMMAND = ("git", "show-ref", "--head")
TIMEOUT = 30  # seconds git may take


def git_refs(workspace: str | os.PathLike[str]) -> dict[str, str] | None:
    """Every ref and HEAD → commit, or None when the workspace is not a git repository."""
    try:
        done = subprocess.run(
            COMMAND,
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_refs(done.returncode, done.stdout, done.stderr)


async def refs_now(workspace: str | os.PathLike[str]) -> dict[str, str] | None:
    """What :func:`git_refs` gives, without holding the event loop: read from the
    repository's files, or (a repository they cannot say) ``git`` awaited while the loop
    serves everything else. A blocking run would stop every turn of the process for as
    long as starting git takes."""
    try:
        return read_refs(workspace)
    except (Unreadable, OSError):
        pass
    try:
        proc = await asyncio.create_subprocess_exec(
            *COMMAND, cwd=workspace, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    except OSError:
        return None
    try:
        out, err = await within(proc.communicate(), TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return None
    assert proc.returncode is not None
    return parse_refs(proc.returncode, out.decode(errors="replace"),
                      err.decode(errors="replace"))


def parse_refs(returncode: int, stdout: str, stderr: str) -> dict[str, str] | None:
    """What ``git show-ref --head`` said: every ref → commit, or None outside a
    repository (or when git failed)."""
    if returncode not in (0, 1) or "not a git repository" in stderr:
        return None
    refs: dict[str, str] = {}
    for line in stdout.splitlines():
        sha, _, ref = line.partition(" ")
        refs[ref] = sha
    return refs


def moved_refs(before: Mapping[str, str] | None, after: Mapping[str, str] | None) -> list[str]:
    """The refs that appeared, vanished or moved."""
    if before is None or after is None:
        return []
    return sorted(r for r in set(before) | set(after) if before.get(r) != after.get(r))
