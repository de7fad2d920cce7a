"""The embedded store: SQLite in WAL mode at ``<workspace>/.rein/rein.db``.

The schema is versioned (table ``schema_version``) and upgraded by the migrations below,
applied in order inside one transaction; a database written by a newer rein is refused
rather than guessed at. The SQL itself is shared with PostgreSQL (:mod:`rein.store.sql`).

Write transactions start with ``BEGIN IMMEDIATE``: writers queue on SQLite's lock (with a
30 s busy timeout) instead of failing halfway. WAL with ``synchronous=NORMAL`` loses no
committed transaction when a process dies; a power loss may lose the last few.

The run lock is an ``flock`` on ``.rein/locks/<run>.lock``: the kernel drops it when the
holding process exits, however it exits, so a ``kill -9`` never leaves a run locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from rein.errors import StoreError
from rein.store import sqlite_checkpoint as checkpoint
from rein.store.sql import SQLStore, dump
from rein.store.sql.runs import fill_node_figures, run_step
from rein.store.sqlite_checkpoint import Checkpointer
from rein.store.sqlite_errors import (
    DAMAGE_SUFFIX,
    Rows,
    cannot_write,
    corrupt,
    os_store_error,
    refuse_empty,
    store_error,
    translated,
)

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

    from rein.store.sql.runs import Step

STATE_DIR = ".rein"
DB_NAME = "rein.db"
FETCH = 500  # rows a streamed read (_stream) holds at a time



# Each entry upgrades the schema from version i to i + 1: SQL statements, and steps that
# take the statement runner (``_x``). Never edit a released entry: append a new one, and
# keep a fixture database of every version in tests/store/fixtures.
MIGRATIONS: tuple[tuple[Step, ...], ...] = (
    (
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            parent_run_id TEXT,
            parent_node_key TEXT,
            graph_id TEXT NOT NULL,
            graph_path TEXT NOT NULL,
            graph_digest TEXT NOT NULL,
            status TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            binding TEXT NOT NULL,
            summary TEXT NOT NULL,
            created INTEGER NOT NULL
        )""",
        "CREATE INDEX runs_parent ON runs (parent_run_id)",
        """CREATE TABLE events (
            run_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            payload TEXT NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
        """CREATE TABLE nodes (
            run_id TEXT NOT NULL,
            node_key TEXT NOT NULL,
            node_id TEXT NOT NULL,
            scope_path TEXT NOT NULL,
            type TEXT NOT NULL,
            status TEXT NOT NULL,
            seq INTEGER NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (run_id, node_key)
        )""",
        """CREATE TABLE approvals (
            approval_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            digest TEXT NOT NULL,
            request TEXT NOT NULL,
            answer TEXT,
            created_at TEXT NOT NULL,
            answered_at TEXT,
            UNIQUE (run_id, key)
        )""",
    ),
    (
        # The driver worker's instructions (rein.workers.driver.store): one row per attempt
        # handed to an external agent, answered at most once.
        """CREATE TABLE driver_turns (
            token TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            root_run_id TEXT NOT NULL,
            node_key TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            instruction TEXT NOT NULL,
            baseline TEXT NOT NULL,
            answer TEXT,
            created_at TEXT NOT NULL,
            answered_at TEXT
        )""",
        "CREATE INDEX driver_turns_root ON driver_turns (root_run_id, status)",
    ),
    (
        # Process groups started for a run, so that a resumed run can stop a group its
        # killed predecessor left behind (rein.engine.run.recovery).
        """CREATE TABLE processes (
            run_id TEXT NOT NULL,
            pgid INTEGER NOT NULL,
            ident TEXT NOT NULL,
            host TEXT NOT NULL,
            owner_pid INTEGER NOT NULL,
            node_key TEXT,
            started_at TEXT NOT NULL,
            PRIMARY KEY (run_id, pgid)
        )""",
        # A new node row takes MAX(seq) + 1 of its run: without this index that is a scan
        # of every node row of the run on each insert, quadratic in the size of the graph.
        "CREATE INDEX nodes_seq ON nodes (run_id, seq)",
    ),
    (
        # Turns in the order they were issued, in SQL both stores speak (SQLite's rowid,
        # which version 2 ordered by, does not exist in PostgreSQL). Older turns are
        # numbered by issue time, then token.
        "ALTER TABLE driver_turns ADD COLUMN ord INTEGER NOT NULL DEFAULT 0",
        """UPDATE driver_turns SET ord = (
            SELECT COUNT(*) FROM driver_turns AS older
            WHERE older.root_run_id = driver_turns.root_run_id
              AND (older.created_at < driver_turns.created_at
                   OR (older.created_at = driver_turns.created_at
                       AND older.token <= driver_turns.token)))""",
        "CREATE INDEX driver_turns_order ON driver_turns (root_run_id, ord)",
    ),
    (
        # Threads of the session runtime (rein.engine.cases.sessions): a durable conversation and
        # its turns, each turn the run it started. ``data`` is the thread's settings as JSON.
        """CREATE TABLE threads (
            thread_id TEXT PRIMARY KEY,
            data TEXT NOT NULL,
            archived INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
        """CREATE TABLE thread_turns (
            thread_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            turn_id TEXT NOT NULL UNIQUE,
            run_id TEXT,
            input TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (thread_id, seq)
        )""",
    ),
    (
        # The workspace each top-level run belongs to (rein.store.workspace_id): its id,
        # which decides, and its path and machine when the run started, to show. Runs
        # stored before have none.
        "ALTER TABLE runs ADD COLUMN workspace_id TEXT",
        "ALTER TABLE runs ADD COLUMN workspace_path TEXT",
        "ALTER TABLE runs ADD COLUMN workspace_host TEXT",
        "CREATE INDEX runs_workspace ON runs (workspace_id, created)",
    ),
    (
        # The figures of each node row's attempts that a run's usage totals read, in columns
        # written with the row (rein.store.sql.runs.figures_of), so that summing a run's usage
        # parses no record. The rows stored before are filled from their records (the last
        # step); a row still without them (``facts`` NULL: written by an older rein after
        # this upgrade) or whose status changed since (an older rein's write) has its record
        # read, as has a row with a driver's attempt (bit 4), which the partial index finds
        # without a scan.
        "ALTER TABLE nodes ADD COLUMN attempts INTEGER",
        "ALTER TABLE nodes ADD COLUMN attempts_rerun INTEGER",
        "ALTER TABLE nodes ADD COLUMN facts INTEGER",
        "ALTER TABLE nodes ADD COLUMN usage_input_tokens DOUBLE PRECISION",
        "ALTER TABLE nodes ADD COLUMN usage_output_tokens DOUBLE PRECISION",
        "ALTER TABLE nodes ADD COLUMN usage_total_tokens DOUBLE PRECISION",
        "ALTER TABLE nodes ADD COLUMN usage_cost_usd DOUBLE PRECISION",
        "ALTER TABLE nodes ADD COLUMN usage_tool_calls DOUBLE PRECISION",
        "ALTER TABLE nodes ADD COLUMN usage_node_executions DOUBLE PRECISION",
        "ALTER TABLE nodes ADD COLUMN figured_status TEXT",
        # Rows come grouped by (type, status, facts) in this index's order: no sort. It
        # also counts a run's nodes by status without reading their rows.
        "CREATE INDEX nodes_facts ON nodes (run_id, type, status, facts)",
        ("CREATE INDEX nodes_by_record ON nodes (run_id)"
         " WHERE facts IS NULL OR (facts & 4) <> 0 OR figured_status <> status"),
        fill_node_figures,
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

_dump = dump  # kept for callers that format rows the way the store does


def _create(path: Path) -> None:
    """Build a new store beside ``path`` and link it into place whole, so that no process
    ever sees a half-made one, and an empty file at ``path`` can only mean a truncated
    store (:func:`refuse_empty`). Losing the race to another process is fine: its store
    is as good as this one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        SQLiteStore._build(fresh)
        with contextlib.suppress(FileExistsError):
            os.link(fresh, path)
    finally:
        for leftover in (fresh, Path(f"{fresh}-wal"), Path(f"{fresh}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def db_path(workspace: str | Path) -> Path:
    """Where the embedded store of ``workspace`` lives."""
    return Path(workspace) / STATE_DIR / DB_NAME


class SQLiteStore(SQLStore):
    """The SQLite implementation of :class:`rein.store.base.Store`."""

    readonly = False  # opened to be read only: rein may not write the store (see _connect)

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.url = str(self.path.resolve())
        with self._translated():
            if not self.path.exists():
                _create(self.path)
            refuse_empty(self.path)
            if os.path.exists(f"{self.path}{DAMAGE_SUFFIX}"):  # the one cost when there is none
                from rein.store.sqlite_damage import refuse_if_damaged

                refuse_if_damaged(self.path)
            try:
                self._connect()
            except sqlite3.Error as exc:
                # SQLite cannot create the WAL's index (-shm) where rein may not write: on
                # a read-only mount, or in a folder rein has no write permission on.
                from rein.store import sqlite_readonly as read_only

                if not (cannot_write(exc) and read_only.unwritable(self.path)):
                    raise
                self._connect(readonly=True)

    def _connect(self, *, readonly: bool = False) -> None:
        if readonly:
            from rein.store import sqlite_readonly as read_only

            self._db = sqlite3.connect(read_only.uri(self.path), uri=True,
                                       isolation_level=None, check_same_thread=False,
                                       timeout=30.0)
            self.readonly = True
        else:
            self._db = sqlite3.connect(str(self.path), isolation_level=None,
                                       check_same_thread=False, timeout=30.0)
        try:
            if not readonly:
                self._db.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a power loss may lose the last commits, a crash loses none.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            # Checkpoints run on a thread of their own, not inside a commit (see
            # rein.store.sqlite_checkpoint).
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            # A WAL that a burst grew past this is cut back to it once rewound.
            self._db.execute(f"PRAGMA journal_size_limit={checkpoint.SIZE_LIMIT}")
            self._commits = 0
            self._folded = 0  # the commit count at this connection's last checkpoint
            self._checkpointer = Checkpointer(self.path)
            self._migrate()
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def _build(cls, path: Path) -> None:
        """Create the database at ``path`` (which must not exist) at the current schema."""
        store = cls.__new__(cls)
        SQLStore.__init__(store)
        store.path, store.url = path, str(path)
        store._connect()
        store.close()  # closing the last connection folds the WAL into the file

    @classmethod
    def open(cls, workspace: str | Path, *, create: bool = True) -> SQLiteStore | None:
        """The store of ``workspace``; ``None`` when it does not exist and ``create`` is false."""
        path = db_path(workspace)
        if not path.exists():
            if not create:
                return None
            with translated(path):
                path.parent.mkdir(parents=True, exist_ok=True)
        return cls(path)

    # -- backend hooks --------------------------------------------------------------------

    def _execute(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> Any:
        # What _translated() does, inline: this runs for every statement.
        try:
            return Rows(self._db.execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        except OSError as exc:
            raise os_store_error(exc, self.path) from exc

    def _stream(self, sql: str, params: tuple[Any, ...] | list[Any] = ()
                ) -> Iterator[tuple[Any, ...]]:
        if self._due:
            self._write_due()
        with self._translated():
            cursor = self._db.execute(sql, params)
            try:
                while rows := cursor.fetchmany(FETCH):
                    yield from rows
            finally:
                cursor.close()

    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        """Re-raise SQLite's and the file system's errors as :class:`StoreError`."""
        try:
            yield
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        except OSError as exc:
            raise os_store_error(exc, self.path) from exc

    _damage: StoreError | None = None  # what the full check found, once it found damage

    def _error(self, exc: sqlite3.Error) -> StoreError:
        """What ``exc`` means; a damaged page has the whole file checked first (once)."""
        if corrupt(exc):
            if self._damage is None:
                from rein.store.sqlite_damage import examine

                self._damage = examine(self.path)
            if self._damage is not None:
                return self._damage
        return store_error(exc, self.path)

    def _begin(self) -> None:
        if self.readonly:
            from rein.store.sqlite_readonly import refused

            raise refused(self.path)
        self._x("BEGIN IMMEDIATE")

    def _end(self, commit: bool) -> None:
        if commit:
            try:
                self._x("COMMIT")
            except StoreError:
                # A COMMIT that did not fit on the disk leaves the transaction open: undo it
                # so that this connection can go on (or close) cleanly.
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise
            self._committed()
            return
        if self._db.in_transaction:  # SQLite may have rolled back already (a full disk)
            self._x("ROLLBACK")

    def _committed(self) -> None:
        """Ask for a checkpoint every few commits, and finish each one here.

        SQLite rewinds the WAL only when a write begins while every frame of it is in the
        database file. The thread copies the frames committed before its checkpoint began
        while this connection goes on committing, so it always leaves some behind: once it
        has served a request, this connection copies those (a few commits' pages) between
        two transactions, and its next write starts the WAL again from its first frame.
        Past BEHIND commits without that, it waits for the thread to finish the checkpoint
        it may be running, and checkpoints itself.
        """
        self._commits += 1
        if self._commits - self._folded > checkpoint.BEHIND:
            self._checkpointer.idle()  # its checkpoint would make this one a no-op
            self._fold()
        elif self._checkpointer.served > self._folded:
            self._fold()
        if self._commits % checkpoint.EVERY == 0:
            self._checkpointer.request(self._commits)

    def _fold(self) -> None:
        """Checkpoint what is left of the WAL on this connection (no transaction is open)."""
        try:
            busy = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0]
        except sqlite3.Error:
            return  # a full disk, say: the next commit tries again
        if not busy:  # busy: another checkpoint runs; the next commit tries again
            self._folded = self._commits

    def changes(self) -> int:
        """SQLite's ``PRAGMA data_version``: it changes whenever another connection (any
        process) commits to the database; this connection's own commits leave it alone.
        Costs microseconds, so a follower of the event log can ask it often and read the
        events only when it moved."""
        with self._translated():
            return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    # -- schema ---------------------------------------------------------------------------

    def schema_version(self) -> int:
        """The schema version the database is at (0: a new database). One query: every
        command that opens the store asks it."""
        with self._translated():
            try:
                got = self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()
            except sqlite3.OperationalError as exc:
                if not str(exc).startswith("no such table"):
                    raise
                return 0
        return int(got[0] or 0)

    def _migrate(self) -> None:
        # Up to date: a plain read, no write lock (``rein next`` opens the store each turn).
        found = self.schema_version()
        if found == SCHEMA_VERSION:
            return
        if found > SCHEMA_VERSION:
            raise self._newer(found)
        if self.readonly:
            raise StoreError(
                f"the run store {self.path} has schema version {found}, older than this "
                f"rein's ({SCHEMA_VERSION}): upgrading it writes it, and rein may not write "
                "it here", code="STORE_READONLY",
                hint="open it once with this rein where .rein/ is writable, or read it here "
                     "with the rein that wrote it")
        with self._tx():
            self._x(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, "
                "applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )
            current = self.schema_version()  # again: another process may have upgraded it
            if current > SCHEMA_VERSION:
                raise self._newer(current)
            for version in range(current, SCHEMA_VERSION):
                for step in MIGRATIONS[version]:
                    run_step(step, self._x)
                self._x("INSERT INTO schema_version (version) VALUES (?)", (version + 1,))

    def _newer(self, version: int) -> StoreError:
        return StoreError(f"the run store {self.path} has schema version {version}, newer "
                          f"than this rein understands ({SCHEMA_VERSION})",
                          hint="upgrade rein, or use a different workspace")

    # -- the run lock ---------------------------------------------------------------------

    def lock_path(self, run_id: str) -> Path:
        """The file whose ``flock`` is the run lock."""
        return self.path.parent / "locks" / f"{run_id}.lock"

    def run_locked(self, run_id: str) -> bool:
        """Whether some process holds the run lock (probed without writing the lock file)."""
        if self.held_here(run_id):
            return True
        try:
            fd = os.open(self.lock_path(run_id), os.O_RDONLY)
        except FileNotFoundError:
            return False  # never locked
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops the probe's own lock, if it got one
        return False

    def _acquire(self, run_id: str) -> Any:
        path = self.lock_path(run_id)
        with translated(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        # Who holds it, for people reading the file; the flock is what counts (so a disk too
        # full to write the line does not stop the lock from being held).
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        return fd

    def _release(self, run_id: str, handle: Any) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(handle, fcntl.LOCK_UN)
        os.close(handle)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """The shared removal, then the runs' lock files (one per run ever locked)."""
        removed = super().delete_runs(run_ids)
        for run_id in run_ids:
            with contextlib.suppress(OSError):
                self.lock_path(run_id).unlink()
        return removed

    def close(self) -> None:
        """Commit a held write, then release the connection (raising a commit failure of
        a held write that no write has reported yet)."""
        try:
            self.flush()
            self._raise_untold()
        finally:
            self._checkpointer.stop()  # so that this connection is the last, and folds the WAL
            self._db.close()
            if self._damage is not None:
                from rein.store.sqlite_damage import rebind

                rebind(self.path)
