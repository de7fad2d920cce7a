"""The shared store: PostgreSQL through ``psycopg`` (v3), for runs several machines see.

Same tables, same SQL, same schema versions as SQLite (:mod:`rein.store.sqlite` holds the
migrations; the few PostgreSQL-only statements are added per version below). Transactions
are explicit ``BEGIN``/``COMMIT`` on an autocommit connection. Writers of one run are
serialized inside their transaction by a transaction-scoped advisory lock, so event
sequence numbers stay dense under concurrent writers.

The run lock is a session-level advisory lock (``pg_try_advisory_lock``): the server drops
it when the holder's connection ends, which a killed process cannot prevent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from rein.errors import StoreError
from rein.store.sql import SQLStore
from rein.store.sql.runs import run_step
from rein.store.sqlite import MIGRATIONS, SCHEMA_VERSION

CHANNEL = "rein_events"  # notified by every commit that appended events (see changes)

# Extra statements per version (index = version - 1), after the shared ones of that version.
PG_EXTRA: dict[int, tuple[str, ...]] = {
    0: ("ALTER TABLE approvals ADD COLUMN ord BIGSERIAL",),  # insertion order (no rowid)
}


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory lock key for ``name``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def redact_url(url: str) -> str:
    """``url`` without its password, for messages."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    return f"{scheme}://{creds.split(':', 1)[0]}@{host}"


# SQLSTATE classes and codes (PostgreSQL manual, appendix A) → (code, what, hint).
_PG_CAUSES: tuple[tuple[str, str, str, str], ...] = (
    ("53100", "STORE_FULL", "the database server's disk is full",
     ("free space on the server and run the command again: the change that did not fit was "
      "rolled back, and everything committed before it is intact")),
    ("53", "STORE_FULL", "the database server is out of resources",
     "check the server's memory, connections and disk, then run the command again"),
    ("XX001", "STORE001", "the database's data is damaged",
     "restore the database from a backup; see the server's log"),
    ("XX002", "STORE001", "an index of the database is damaged",
     "REINDEX the rein tables, or restore the database from a backup"),
    ("40", "STORE_BUSY", "the transaction conflicted with another one",
     "run the command again"),
    ("55P03", "STORE_BUSY", "a row or table is locked by another session",
     "run the command again in a moment"),
    ("57014", "STORE_BUSY", "the statement was cancelled (a timeout)",
     "run the command again"),
    ("25006", "STORE_READONLY", "the database is read-only here",
     "connect to the primary server, or a role that may write"),
    ("42501", "STORE_READONLY", "the role may not do this",
     "grant the role rights on rein's tables"),
    ("23", "STORE_CONFLICT", "the database refused a write",
     "another process may have written the same record; run the command again"),
    ("08", "STORE_CONNECT", "the connection to the database failed",
     "check that the server runs and is reachable, then run the command again"),
    ("57P", "STORE_CONNECT", "the database server shut down or restarted",
     "run the command again when the server is back"),
)


def pg_store_error(exc: Exception, where: str, *, connection: bool = False) -> StoreError:
    """The :class:`StoreError` for a psycopg error, by its SQLSTATE (never by its text);
    ``connection``: the error is about the connection itself (an OperationalError)."""
    detail = str(exc).strip()
    state = getattr(exc, "sqlstate", None) or ""
    for prefix, code, what, hint in _PG_CAUSES:
        if state.startswith(prefix):
            return StoreError(f"{what} ({where}): {detail}", code=code, hint=hint,
                              sqlstate=state)
    if not state and connection:  # no SQLSTATE: the client lost the connection
        return StoreError(f"the connection to the run store {where} failed: {detail}",
                          code="STORE_CONNECT",
                          hint="check that the server runs and is reachable")
    return StoreError(f"the run store {where} failed: {detail}", code="STORE_FAILED",
                      hint="check the server's log", sqlstate=state or None)


class PostgresStore(SQLStore):
    """The PostgreSQL implementation of :class:`rein.store.base.Store`."""

    placeholder = "%s"
    approval_order = "ord"

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        from rein.core.extras import require

        require("postgres", "a postgresql:// store", code="STORE004")
        import psycopg
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to the run store {redact_url(url)}: "
                             f"{str(exc).strip()}", code="STORE_CONNECT",
                             hint="check the URL, that the server runs, and the credentials"
                             ) from exc
        self._psycopg = psycopg
        self._listener: Any = None  # changes()'s LISTEN connection, opened on first use
        self._heard = 0
        self._migrate()

    # -- backend hooks --------------------------------------------------------------------

    def _execute(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> Any:
        try:
            return self._conn.execute(sql.replace("?", "%s"), tuple(params))
        except self._psycopg.Error as exc:
            lost = isinstance(exc, self._psycopg.OperationalError)
            raise pg_store_error(exc, redact_url(self.url), connection=lost) from exc

    def _begin(self) -> None:
        self._x("BEGIN")

    def _end(self, commit: bool) -> None:
        if commit and self._appended:
            # Watchers (the web console) LISTEN on this channel: PostgreSQL delivers the
            # notification only if the transaction commits. Sent with the COMMIT, in the
            # same round trip.
            try:  # no parameters: the simple protocol, which takes two statements at once
                self._conn.execute(f"NOTIFY {CHANNEL}; COMMIT")
            except self._psycopg.Error as exc:
                lost = isinstance(exc, self._psycopg.OperationalError)
                raise pg_store_error(exc, redact_url(self.url), connection=lost) from exc
            return
        self._x("COMMIT" if commit else "ROLLBACK")

    def changes(self) -> int:
        """A number that changes whenever a transaction that appended events commits (any
        process, this one included): the notifications heard on a LISTEN connection of its
        own, opened on first use. Each call reads what the socket holds, never waits."""
        if self._listener is None:
            try:
                self._listener = self._psycopg.connect(self.url, autocommit=True,
                                                       connect_timeout=10)
                self._listener.execute(f"LISTEN {CHANNEL}")
            except self._psycopg.Error as exc:
                raise pg_store_error(exc, redact_url(self.url), connection=True) from exc
        pq = self._listener.pgconn
        pq.consume_input()
        while pq.notifies() is not None:
            self._heard += 1
        return self._heard

    def _serialize_run(self, run_id: str) -> None:
        self._x("SELECT pg_advisory_xact_lock(?)", (lock_key(f"rein:tx:{run_id}"),))

    # -- schema ---------------------------------------------------------------------------

    def schema_version(self) -> int:
        """The schema version the database is at."""
        if self._x("SELECT to_regclass('schema_version')").fetchone()[0] is None:
            return 0
        got = self._x("SELECT MAX(version) FROM schema_version").fetchone()
        return int(got[0] or 0)

    def _migrate(self) -> None:
        if self.schema_version() == SCHEMA_VERSION:  # up to date: no lock, no write
            return
        with self._tx():
            self._x("SELECT pg_advisory_xact_lock(?)", (lock_key("rein:migrate"),))
            self._x("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, "
                    "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            current = self.schema_version()
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"the run store {redact_url(self.url)} has schema version {current}, "
                    f"newer than this rein understands ({SCHEMA_VERSION})",
                    hint="upgrade rein, or use a different database")
            for version in range(current, SCHEMA_VERSION):
                for step in (*MIGRATIONS[version], *PG_EXTRA.get(version, ())):
                    run_step(step, self._x)
                self._x("INSERT INTO schema_version (version) VALUES (?)", (version + 1,))

    # -- the run lock ---------------------------------------------------------------------

    def _acquire(self, run_id: str) -> Any:
        got = self._x("SELECT pg_try_advisory_lock(?)", (lock_key(f"rein:run:{run_id}"),))
        return True if got.fetchone()[0] else None

    def _release(self, run_id: str, handle: Any) -> None:
        if not self._conn.closed:
            self._x("SELECT pg_advisory_unlock(?)", (lock_key(f"rein:run:{run_id}"),))

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """The shared removal, with the runs' scale-out rows (their DBOS workflows and
        attempt-run rows, :mod:`rein.store.queue_rows`) in the same transaction."""
        from rein.store.queue_rows import delete_queue_rows

        with self._tx():
            delete_queue_rows(self._x, run_ids)
            return super().delete_runs(run_ids)

    def close(self) -> None:
        """Commit a held write, then close the connection (which also drops any advisory
        lock it held)."""
        try:
            if not self._conn.closed:
                self.flush()
            self._raise_untold()
        finally:
            self._conn.close()
            if self._listener is not None:
                self._listener.close()
