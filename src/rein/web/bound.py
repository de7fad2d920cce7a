"""A file an approval binds, as its card reads it: the copy the approval keeps, and the file
as it is now.

An approval binds each workspace file it shows by the digest of its content (``files`` of its
request) and keeps a copy of each text file (``contents``), taken from the bytes that digest
was computed over. A person must read that copy, not the file: whoever can write the
workspace can put other content in the file while the card is read and the bound content
back before the accept, which then finds the file unchanged. A copy is shown only when its
own digest is the bound one (:func:`copy_of`); a file read now is shown only from the bytes
whose digest was computed in the same read (:func:`read_now`). The card's change against
the last commit is drawn from the text shown (:func:`committed`, :func:`change`).

A copy is checked as every surface checks it (``kept_copy``, which the Harness's module
gives the surfaces); the file read now is hashed here, in the same read that gives its
text.
"""

from __future__ import annotations

import difflib
import os
import subprocess
from pathlib import Path
from typing import Literal

from rein.core.frozen import Frozen
from rein.engine.service import ApprovalRow, file_content, kept_copy

KEPT = "contents"  # the request's copies: file name → the text presented
MAX_READ = 1 << 20  # bytes of a file read now whose text is shown (its digest: any size)
GIT_SECONDS = 10

Copy = Literal["intact", "none", "altered"]
"""``intact``: the copy is the bound content; ``none``: no copy was kept (a directory, a
file not text or beyond the copies kept, an entry asked before copies were kept);
``altered``: the copy is not the bound content (edited in the run store, or a secret's
value redacted from it)."""


def copy_of(row: ApprovalRow, name: str) -> tuple[Copy, str | None]:
    """The copy ``row`` keeps of the file ``name``, with its text only when it is intact
    (checked against the bound digest, as every surface checks it: the engine's
    ``kept_copy``, through the Harness's module)."""
    state, text = kept_copy(row, name)
    return ("intact", text) if state == "intact" else (
        ("altered", None) if state == "altered" else ("none", None))


class Now(Frozen):
    """The file ``name`` as it is now: ``kind`` ``file`` (with the ``digest`` of its bytes
    and their ``text`` when it is UTF-8 text of at most :data:`MAX_READ` bytes),
    ``directory``, or ``gone`` (missing, unreadable, outside the workspace, not a file)."""

    kind: Literal["file", "directory", "gone"]
    digest: str | None = None
    text: str | None = None


def read_now(workspace: Path, name: str) -> Now:
    """``name`` read once: what its text shows is what its digest was computed over."""
    root = workspace.resolve()
    try:
        path = (root / name).resolve()
    except (OSError, ValueError):
        return Now(kind="gone")
    if path != root and root not in path.parents:
        return Now(kind="gone")
    try:
        if path.is_dir():
            return Now(kind="directory")
        digest, text = file_content(path, MAX_READ)  # one read: the text is of the digest
    except (OSError, ValueError):
        return Now(kind="gone")
    if digest is None:  # a FIFO, a device: never read
        return Now(kind="gone")
    return Now(kind="file", digest=digest, text=text)


# The last commit's copy of a file is read with plumbing that converts nothing (no filter,
# no textconv) and runs nothing the repository's own configuration names, which whoever
# writes the workspace may have written.
_GIT_CONFIG = ("core.fsmonitor=false", "core.hooksPath=" + os.devnull, "protocol.allow=never",
               "credential.helper=")
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_LAZY_FETCH": "1", "GIT_NO_REPLACE_OBJECTS": "1", "LC_ALL": "C"}
_KEEP_ENV = ("PATH", "HOME", "XDG_CONFIG_HOME", "TZ", "SYSTEMROOT")


def committed(workspace: Path, name: str) -> str | None:
    """The text of ``name`` in the workspace's last commit, or None (no repository, not
    committed, not text, git missing)."""
    argv = ["git", "--no-pager"]
    for item in _GIT_CONFIG:
        argv += ["-c", item]
    env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ} | _GIT_ENV
    try:
        done = subprocess.run([*argv, "cat-file", "blob", f"HEAD:./{name}"], cwd=workspace,
                              env=env, capture_output=True, timeout=GIT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        text = done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else text


def change(name: str, before: str, after: str) -> str | None:
    """``after`` as its change from ``before`` (a unified diff), None when they are equal."""
    if before == after:
        return None
    return "\n".join(difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"a/{name} (last commit)",
        f"b/{name} (as presented)", lineterm=""))


__all__ = ["KEPT", "MAX_READ", "Copy", "Now", "change", "committed", "copy_of", "read_now"]
