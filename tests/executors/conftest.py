"""Fixtures of the scale-out tests: they skip, saying why, without PostgreSQL or DBOS."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.executors.cluster import fresh_database, postgres_base


@pytest.fixture
def db_url() -> Iterator[str]:
    """A fresh database on the test server, dropped afterwards."""
    yield from fresh_database(postgres_base())
