"""The console on the PostgreSQL store: a team watching shared runs sees the same pages,
answers and feed as on the embedded store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store.conftest import pg_url  # noqa: F401  (the fixture)
from tests.web.conftest import Console, make_console, sse_events


@pytest.fixture
def pg_console(workspace: Path, pg_url: str) -> Iterator[Console]:  # noqa: F811
    yield from make_console(workspace, store_url=pg_url)


def test_a_run_started_answered_and_streamed_on_postgresql(pg_console: Console) -> None:
    c = pg_console
    assert c.harness.store.url is not None and c.harness.store.url.startswith("postgresql")
    c.login()
    run_id = c.start("g.agraph.yaml")
    page = c.client.get(f"/runs/{run_id}").text
    assert 'data-node="ok" data-status="awaiting_human"' in page
    [row] = c.pending()
    r = c.post(f"/approvals/{row.approval_id}", {"action": "cancel", "digest": row.digest})
    assert r.status_code == 303
    assert c.steering is not None and c.steering.idle(60)
    assert c.harness.run(run_id).status.value == "cancelled"
    stored = [e.seq for e in c.harness.events(run_id)]
    body = c.client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "2"}).text
    assert [m["seq"] for m in sse_events(body)] == [s for s in stored if s > 2]
