"""Threads on the PostgreSQL store: a team's shared threads read and answered the same way."""

from __future__ import annotations

from pathlib import Path

from rein.protocol import transcript
from tests.store.conftest import pg_url  # noqa: F401  (the fixture)
from tests.web.conftest import make_console
from tests.web.threads_env import configure, waiting_thread


def test_a_thread_is_drawn_and_answered_on_postgresql(workspace: Path,
                                                      pg_url: str) -> None:  # noqa: F811
    configure(workspace)
    thread_id, approval_id = waiting_thread(workspace, store_url=pg_url)
    for c in make_console(workspace, store_url=pg_url):
        assert c.harness.store.url is not None and c.harness.store.url.startswith("postgresql")
        c.login()
        assert thread_id in c.client.get("/threads").text
        page = c.client.get(f"/threads/{thread_id}").text
        assert f"data-question='{approval_id}'" in page
        entry = c.harness.store.get_approval(approval_id)
        assert entry is not None
        r = c.post(f"/threads/{thread_id}/approvals/{approval_id}",
                   {"action": "accept", "digest": entry.digest})
        assert r.status_code == 303
        assert c.steering is not None and c.steering.idle(60)
        [view] = transcript.turns(c.harness, thread_id)
        assert view.status == "completed"
        assert "web-console-was-here" in c.client.get(f"/threads/{thread_id}").text
