"""WAL checkpoints off the commit path, and a WAL that stays bounded however long the run.

SQLite's automatic checkpoint runs inside the ``COMMIT`` that crosses its threshold: it
copies the WAL into the database file and syncs both, on the connection that committed,
which for the engine is the one event loop every running node shares. So the store turns
it off on its connection (``PRAGMA wal_autocheckpoint=0``) and asks this thread, with a
connection of its own, for a ``PASSIVE`` checkpoint every :data:`EVERY` commits. A passive
checkpoint never takes the write lock and never waits for readers; the sqlite3 module
releases the GIL while it runs, so the loop goes on committing meanwhile.

Copying the WAL is not enough to bound it: SQLite starts the WAL again from its first
frame only when a write begins while *every* frame is in the database file, and the
commits made while the thread copies are not. So once the thread has served a request,
the committing connection checkpoints what is left, a few commits' pages, between two
transactions, and its next write rewinds the WAL (``SQLiteStore._committed``). Should
the thread fall :data:`BEHIND` commits behind (stopped, starved, or still copying a huge
commit), the committing connection waits for a checkpoint of the thread that is running,
if one is, and checkpoints everything inline, as SQLite would have. The WAL therefore
holds the frames of at most :data:`BEHIND` commits and one more, whatever the length of
the run (unless another process holds a read of an old snapshot, or checkpoints the same
file, at the very moment), and a WAL that a burst (one huge commit) grew past
:data:`SIZE_LIMIT` is cut back to it when rewound.

Durability is unchanged: a commit is in the WAL when ``COMMIT`` returns, as before; a
checkpoint only moves committed pages into the main file. The thread starts on the first
request, so a short command that commits a few times never starts one; closing the store
stops it first, so that the store's own connection, the last to close, folds the WAL into
the file as before.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    import threading

#: Commits between two requests (SQLite's own default is 1,000 pages, a few commits each).
EVERY = 128
#: Commits since the WAL was last wholly checkpointed after which the committing
#: connection does it, waiting first for a checkpoint of the thread that is still running.
BEHIND = 2 * EVERY
#: Bytes a rewound WAL file is cut back to (``PRAGMA journal_size_limit``).
SIZE_LIMIT = 16 * 1024 * 1024


class Checkpointer:
    """A daemon thread that runs passive checkpoints of one database when asked."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.served = 0  # the commit count of the newest request a checkpoint served
        self.runs = 0  # checkpoints this thread ran (tests count them)
        self._wanted = 0
        self._stop = False
        # Made with the thread, on the first request: a command that reads, or commits a
        # few times (a driver turn), imports no `threading`.
        self._idle: threading.Event | None = None  # set while no checkpoint of it runs
        self._wake: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def request(self, commits: int) -> None:
        """A checkpoint, soon, covering at least the first ``commits`` commits."""
        self._wanted = commits
        if self._wake is None or self._thread is None:
            import threading

            self._idle, self._wake = threading.Event(), threading.Event()
            self._idle.set()
            self._thread = threading.Thread(target=self._serve, name="rein-wal-checkpoint",
                                            args=(self._idle, self._wake), daemon=True)
            self._thread.start()
        self._wake.set()

    def _serve(self, idle: threading.Event, wake: threading.Event) -> None:
        from urllib.parse import quote

        try:  # mode=rw: a store removed meanwhile is never created afresh by this thread
            db = sqlite3.connect(f"file:{quote(str(self.path))}?mode=rw", uri=True,
                                 isolation_level=None, check_same_thread=False, timeout=30.0)
        except sqlite3.Error:
            return  # the committing connection checkpoints inline once BEHIND is reached
        handled = 0
        try:
            while True:
                # State is read again after every wake: a request or a stop that comes
                # while a checkpoint runs is seen on the next pass, never slept through.
                wanted = self._wanted
                if wanted > handled:
                    handled = wanted
                    # An error (a busy or full disk) leaves the WAL to the next request, or
                    # to the inline fallback: a checkpoint is never worth failing a run for.
                    idle.clear()
                    try:
                        with contextlib.suppress(sqlite3.Error):
                            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                            self.runs += 1
                            self.served = wanted
                    finally:
                        idle.set()
                    continue
                if self._stop:
                    return
                wake.wait()
                wake.clear()
        finally:
            db.close()

    def idle(self) -> None:
        """Return once no checkpoint of this thread is running (at once when none is)."""
        if self._idle is not None:
            self._idle.wait()

    def stop(self) -> None:
        """End the thread once every request made is served."""
        self._stop = True
        if self._wake is not None:
            self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


__all__ = ["BEHIND", "EVERY", "SIZE_LIMIT", "Checkpointer"]
