"""PostgreSQL errors become StoreErrors by SQLSTATE: a full disk, damaged data, a conflict,
a read-only server and a lost connection each get their own code and hint (before, every
one was the same "the run store failed")."""

from __future__ import annotations

import psycopg
import pytest

from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.errors import StoreError
from rein.store.base import RunRow
from rein.store.postgres import PostgresStore, pg_store_error
from tests.store.conftest import pg_url  # noqa: F401 - the fixture


def _run(run_id: str = "run-1") -> RunRow:
    return RunRow(run_id=RunId(run_id), graph_id="g", graph_path="g.agraph.yaml",
                  graph_digest="sha256-abc=", status=RunStatus.RUNNING,
                  started_at="2026-01-01T00:00:00Z", binding={})


@pytest.mark.parametrize("error, code", [
    (psycopg.errors.DiskFull("could not extend file"), "STORE_FULL"),
    (psycopg.errors.DataCorrupted("invalid page in block 7"), "STORE001"),
    (psycopg.errors.IndexCorrupted("index is corrupted"), "STORE001"),
    (psycopg.errors.SerializationFailure("could not serialize"), "STORE_BUSY"),
    (psycopg.errors.ReadOnlySqlTransaction("read-only"), "STORE_READONLY"),
    (psycopg.errors.UniqueViolation("duplicate key"), "STORE_CONFLICT"),
    (psycopg.errors.AdminShutdown("terminating connection"), "STORE_CONNECT"),
])
def test_each_sqlstate_class_has_its_own_code(error: Exception, code: str) -> None:
    # The psycopg classes themselves: each carries the SQLSTATE its server would send.
    translated = pg_store_error(error, "postgresql://rein@db/rein")
    assert translated.code == code
    assert translated.hint
    assert "postgresql://rein@db/rein" in translated.message


def test_a_full_server_disk_is_not_reported_as_damage() -> None:
    error = pg_store_error(psycopg.errors.DiskFull("no space left"), "db")
    assert "disk is full" in error.message
    assert error.hint and "everything committed before it is intact" in error.hint


def test_a_read_only_server_is_store_readonly(pg_url: str) -> None:  # noqa: F811
    store = PostgresStore(pg_url)
    try:
        store._conn.execute("SET default_transaction_read_only = on")
        with pytest.raises(StoreError) as info:
            store.create_run(_run(), event_type="run/started", payload={})
        assert info.value.code == "STORE_READONLY"
        assert info.value.fields["sqlstate"] == "25006"
    finally:
        store.close()


def test_a_connection_the_server_ended_is_store_connect(pg_url: str) -> None:  # noqa: F811
    store = PostgresStore(pg_url)
    try:
        pid = store._conn.info.backend_pid
        with psycopg.connect(pg_url, autocommit=True) as admin:
            # With a timeout, the call returns once the backend has exited (PostgreSQL 14+).
            admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
        with pytest.raises(StoreError) as info:
            store.list_runs()
        assert info.value.code == "STORE_CONNECT"
    finally:
        store.close()
