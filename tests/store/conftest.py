"""One store test suite, run against every store: SQLite always, PostgreSQL when
``REIN_TEST_POSTGRES_URL`` names a server (``eval "$(bash scripts/postgres.sh start)"``)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PG_ENV = "REIN_TEST_POSTGRES_URL"


def postgres_url() -> str:
    """The test server's URL, or skip the test saying how to get one."""
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f"{PG_ENV} is not set: start a server with "
                    "`eval \"$(bash scripts/postgres.sh start)\"` (make test does)")
    return url


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose search_path is a fresh schema, dropped afterwards."""
    import psycopg

    base = postgres_url()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    yield f"{base}{sep}options=-csearch_path%3D{schema}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty store of each kind."""
    if request.param == "sqlite":
        return str(tmp_path / ".rein" / "rein.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def any_store(store_url: str, tmp_path: Path) -> Iterator[Any]:
    from rein.store.open import open_store

    store = open_store(tmp_path, url=store_url)
    yield store
    store.close()
