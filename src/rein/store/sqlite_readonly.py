"""A store rein may not write, opened to be read: ``.rein/`` on a read-only mount, or a
folder whose permissions forbid this user to write it.

Reading a WAL-mode database normally writes: SQLite creates the WAL's index (``-shm``)
beside the file, and cannot where rein may not write. What it can read instead depends
on what the last writer left:

* no WAL, or an empty one (a store closed cleanly): every commit is in the file, which is
  opened ``immutable``: read as it is, with no index, no lock, nothing written;
* a WAL with its ``-shm`` (a writer was killed): SQLite reads both without writing them
  (``mode=ro``), so the last commits are seen;
* a WAL without its ``-shm``: its commits cannot be read without creating the index, and
  reading the file alone would show the runs as they were before them, so the store is
  refused (STORE_READONLY) rather than shown out of date.

Every write to a store opened this way is refused with STORE_READONLY before it begins.
``immutable`` promises SQLite that nobody changes the file meanwhile: on a read-only mount
of a folder that another machine writes, a reading command may see a commit half-made
and fail; run it again.
"""

from __future__ import annotations

import os
from pathlib import Path

from rein.errors import StoreError
from rein.store.sqlite_errors import READONLY_HINT


def unwritable(path: Path) -> bool:
    """Whether rein may not write the store at ``path`` or the folder it is in."""
    mine = os.access in os.supports_effective_ids  # as the kernel judges this process
    return not (os.access(path.parent, os.W_OK, effective_ids=mine)
                and os.access(path, os.W_OK, effective_ids=mine))


def uri(path: Path) -> str:
    """How to open the store at ``path`` without writing anything beside it."""
    from urllib.parse import quote

    wal = Path(f"{path}-wal")
    try:
        pending = wal.stat().st_size > 0
    except FileNotFoundError:
        pending = False
    if not pending:
        return f"file:{quote(str(path))}?mode=ro&immutable=1"
    if Path(f"{path}-shm").exists():
        return f"file:{quote(str(path))}?mode=ro"
    raise StoreError(
        f"the run store {path} cannot be read here: its last commits are in {wal.name}, "
        f"which SQLite reads only through an index ({path.name}-shm) that it would have "
        "to create, and rein may not write beside the store",
        code="STORE_READONLY",
        hint="open the workspace once where .rein/ is writable (any rein command that "
             "reads the store folds the WAL into the file when it closes), then read it "
             "here again")


def refused(path: Path) -> StoreError:
    """The error of a write to a store opened read-only."""
    return StoreError(f"the run store {path} is read-only here (a read-only mount, or no "
                      "permission to write .rein/), and this command writes to it",
                      code="STORE_READONLY", hint=READONLY_HINT)


__all__ = ["refused", "unwritable", "uri"]
