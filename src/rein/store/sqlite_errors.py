"""SQLite's errors, translated at the edge into :class:`StoreError` with a code per cause.

What went wrong decides what a person should do, so the causes are kept apart: a full disk
(free space; nothing committed is lost) is not a damaged file (restore it, or move it
aside and lose its runs), and neither is a busy or read-only one. SQLite reports the cause
as its result code (``sqlite_errorcode``), which is what is matched here, never the
message text.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

from rein.errors import StoreError

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

# Primary result codes (https://sqlite.org/rescode.html); the extended code's low byte.
_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT = 5, 6, 8, 10, 11
_FULL, _CANTOPEN, _CONSTRAINT, _NOTADB = 13, 14, 19, 26

#: Beside the store, the verdict of a full check that found it damaged
#: (rein.store.sqlite_damage): its name is all that opening the store needs to know.
DAMAGE_SUFFIX = ".damage"

DAMAGED_HINT = ("the file is damaged or not rein's: restore .rein/rein.db from a backup, or "
                "move .rein/ aside to start afresh (its runs are then lost)")
READONLY_HINT = ("reading commands (runs list, show, record, events; approvals list) work; "
                 "to run this one, make .rein/ writable (mount it read-write, or give this "
                 "user write permission on the folder and its files), or work in a writable "
                 "copy of the workspace")
FULL_HINT = ("free some space on the disk and run the command again: the change that did "
             "not fit was rolled back, and everything committed before it is intact")


def store_error(exc: sqlite3.Error, path: Path) -> StoreError:
    """The :class:`StoreError` that says what ``exc`` means for the store at ``path``."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    if primary == _FULL or primary == _IOERR and disk_full(path):
        return StoreError(f"the disk holding the run store {path} is full ({exc})",
                          code="STORE_FULL", hint=FULL_HINT)
    if primary in (_CORRUPT, _NOTADB):
        return StoreError(f"cannot read the run store {path}: {exc}", code="STORE001",
                          hint=DAMAGED_HINT)
    if primary in (_BUSY, _LOCKED):
        return StoreError(f"the run store {path} is busy: {exc}", code="STORE_BUSY",
                          hint="another rein process is writing it; retry in a moment")
    if primary == _READONLY:
        return StoreError(f"the run store {path} is read-only: {exc}", code="STORE_READONLY",
                          hint=READONLY_HINT)
    if primary == _CANTOPEN:
        return StoreError(f"cannot open the run store {path}: {exc}", code="STORE_OPEN",
                          hint="check that the workspace exists and is writable")
    if primary == _CONSTRAINT:
        return StoreError(f"the run store {path} refused a write: {exc}", code="STORE_CONFLICT",
                          hint="another process may have written the same record; run the "
                               "command again")
    if primary == _IOERR:
        return StoreError(f"the run store {path} could not be read or written: {exc}",
                          code="STORE_IO",
                          hint="check the disk and the file system (a removed or remounted "
                               "volume, a network file system that went away)")
    return StoreError(f"the run store {path} failed: {exc}", code="STORE_FAILED",
                      hint="run the command again; if it keeps failing, report it")


# Below this much free space an I/O error is taken for a full disk. SQLite reports ENOSPC
# as SQLITE_FULL only where it writes the database or its WAL; growing the WAL index (the
# -shm file) or syncing fails as a plain I/O error, which on a full disk it almost always is.
_NEARLY_FULL = 1024 * 1024


def corrupt(exc: sqlite3.Error) -> bool:
    """Whether SQLite found a damaged page (``SQLITE_CORRUPT``): a full check is due."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == _CORRUPT


def cannot_write(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is SQLite unable to write the file or create one beside it (the
    WAL's index, on opening), as on a read-only mount."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (_READONLY, _CANTOPEN)


def disk_full(path: Path) -> bool:
    """Whether the file system holding ``path`` has (almost) no space left for rein."""
    try:
        info = os.statvfs(path.parent)
    except OSError:
        return False
    return info.f_bavail * info.f_frsize < _NEARLY_FULL


def os_store_error(exc: OSError, path: Path) -> StoreError:
    """The same for the file system calls rein makes around the database itself."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(f"the disk holding the run store {path} is full ({exc.strerror})",
                          code="STORE_FULL", hint=FULL_HINT)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return StoreError(f"the run store {path} is read-only: {exc.strerror}",
                          code="STORE_READONLY", hint=READONLY_HINT)
    return StoreError(f"the run store {path} could not be read or written: {exc.strerror}",
                      code="STORE_IO", hint="check the disk and the file system")


@contextlib.contextmanager
def translated(path: Path) -> Iterator[None]:
    """Re-raise SQLite's and the file system's errors as :class:`StoreError`."""
    try:
        yield
    except sqlite3.Error as exc:
        raise store_error(exc, path) from exc
    except OSError as exc:
        raise os_store_error(exc, path) from exc


def refuse_empty(path: Path) -> None:
    """A store file of zero bytes is a store that was truncated, not a new one.

    rein never leaves an empty file behind (a new store is built aside and linked into
    place whole), so opening one as new would silently discard every run it held.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):  # a pipe or device would block or never end
        raise StoreError(f"the run store {path} is not a regular file", code="STORE_OPEN",
                         hint="move it aside: rein keeps its runs in a regular file there")
    if info.st_size == 0:
        raise StoreError(
            f"the run store {path} is empty (0 bytes): it was truncated, and its runs are gone",
            code="STORE_EMPTY",
            hint="restore .rein/rein.db from a backup; or, to start afresh on purpose, "
                 "delete the empty file",
        )


class Rows:
    """A statement's rows, fetched while errors are still being translated (a damaged page
    can fail the fetch, not only the execute)."""

    __slots__ = ("_next", "_rows")

    def __init__(self, rows: list[Any]) -> None:
        self._rows = rows
        self._next = 0

    def fetchone(self) -> Any:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[Any]:
        rest, self._next = self._rows[self._next:], len(self._rows)
        return rest
