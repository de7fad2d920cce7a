"""Writing a small file whole or not at all.

Every file rein writes for a person or another process to read later (a profile, a flow's
state, a published plan, a generated graph, an evaluation's ledger) is written through
:func:`write_atomic`: a reader sees the old bytes or the new ones, never half a file, and
two processes writing at once never share a temporary name.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically and durably; on any failure the
    original is untouched and no temporary file is left. The parent folder is created when
    missing. The new file keeps the old one's permissions, or takes ``mode`` when given."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    # Created as any new file is (0666 less the umask), never following a planted link.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        keep = mode
        if keep is None:
            with contextlib.suppress(OSError):
                keep = path.stat().st_mode & 0o777
        if keep is not None:
            os.chmod(tmp, keep)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # not every platform can fsync a directory
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
