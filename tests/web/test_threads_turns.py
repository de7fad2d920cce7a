"""A turn started from a thread's page: the text becomes a conversation turn of the session
runtime, run by the console's Steering; what the runtime refuses is refused in the page."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rein.protocol import transcript
from tests.web.conftest import Console, make_console
from tests.web.threads_env import configure


@pytest.fixture
def console(workspace: Path) -> Iterator[Console]:
    configure(workspace)
    yield from make_console(workspace)


def test_a_message_typed_in_the_page_runs_a_turn_answered_in_the_page(
        console: Console) -> None:
    console.login()
    thread_id = console.harness.sessions.start_thread(name="typed").thread_id
    page = console.client.get(f"/threads/{thread_id}").text
    assert f'action="/threads/{thread_id}/turns"' in page and "<textarea" in page
    r = console.post(f"/threads/{thread_id}/turns",
                     {"text": "run the command, then write notes.txt"})
    assert r.status_code == 303 and r.headers["location"] == f"/threads/{thread_id}"
    assert console.steering is not None and console.steering.idle(60)
    [view] = transcript.turns(console.harness, thread_id)
    assert view.kind == "conversation" and view.run_id is not None
    [turn_row] = console.harness.store.thread_turns(thread_id)
    assert turn_row.run_id == view.run_id  # recorded, as a client's stream records it
    assert view.items[0]["content"] == [{"type": "text",
                                         "text": "run the command, then write notes.txt"}]
    [asked] = view.pending
    page = console.client.get(f"/threads/{thread_id}").text
    assert "<div data-compose hidden>" in page  # a turn is in progress: nothing to send yet
    r = console.post(f"/threads/{thread_id}/approvals/{asked.id}",
                     {"action": "accept", "digest": asked.digest})
    assert r.status_code == 303 and console.steering.idle(60)
    [view] = transcript.turns(console.harness, thread_id)
    assert view.status == "completed"
    assert "<div data-compose><form" in console.client.get(f"/threads/{thread_id}").text


def test_what_the_runtime_refuses_is_refused_in_the_page(console: Console) -> None:
    console.login()
    sessions = console.harness.sessions
    thread_id = sessions.start_thread().thread_id
    r = console.post(f"/threads/{thread_id}/turns", {"text": "  "})
    assert r.status_code == 409 and "THREAD004" in r.text
    assert console.harness.store.thread_turns(thread_id) == []
    r = console.post(f"/threads/{thread_id}/turns", {"text": "run the command"})
    assert r.status_code == 303
    assert console.steering is not None and console.steering.idle(60)
    r = console.post(f"/threads/{thread_id}/turns", {"text": "and another"})
    assert r.status_code == 409 and "THREAD001" in r.text  # the first waits on its command
    assert len(console.harness.store.thread_turns(thread_id)) == 1
    sessions.update(thread_id, archived=True)
    r = console.post(f"/threads/{thread_id}/turns", {"text": "more"})
    assert r.status_code == 409 and "THREAD003" in r.text


def test_a_thread_whose_policy_is_never_is_not_started_from_the_page(
        console: Console) -> None:
    console.login()
    thread_id = console.harness.sessions.start_thread(approval_policy="never").thread_id
    assert "<textarea" not in console.client.get(f"/threads/{thread_id}").text
    r = console.post(f"/threads/{thread_id}/turns", {"text": "run the command"})
    assert r.status_code == 409 and "WEB431" in r.text
    assert console.harness.store.thread_turns(thread_id) == []


def test_read_only_and_the_guard_refuse_a_turn(workspace: Path) -> None:
    configure(workspace)
    for c in make_console(workspace, read_only=True):
        c.login()
        thread_id = c.harness.sessions.start_thread().thread_id
        assert "<textarea" not in c.client.get(f"/threads/{thread_id}").text
        r = c.post(f"/threads/{thread_id}/turns", {"text": "run the command"})
        assert r.status_code == 403 and "WEB403" in r.text
        assert c.harness.store.thread_turns(thread_id) == []
    for c in make_console(workspace):
        c.login()
        thread_id = c.harness.sessions.start_thread().thread_id
        r = c.post(f"/threads/{thread_id}/turns", {"text": "hi"}, csrf=False)
        assert r.status_code == 403
        r = c.post(f"/threads/{thread_id}/turns", {"text": "hi"}, origin="http://evil.example")
        assert r.status_code == 403
        assert c.harness.store.thread_turns(thread_id) == []
        assert c.post("/threads/thr-nope/turns", {"text": "hi"}).status_code == 404


def test_a_turn_whose_run_is_refused_or_never_started_shows_ended(workspace: Path) -> None:
    configure(workspace)
    with (workspace / "rein.toml").open("a") as toml:
        toml.write('\n[executor]\nkind = "nonesuch"\n')
    for c in make_console(workspace):
        c.login()
        sessions = c.harness.sessions
        thread_id = sessions.start_thread().thread_id
        r = c.post(f"/threads/{thread_id}/turns", {"text": "run the command"})
        assert r.status_code == 409 and "SCALE001" in r.text
        [view] = transcript.turns(c.harness, thread_id)
        assert (view.status, view.run_id, view.error) == (
            "failed", None, ("SCALE001: [executor] kind 'nonesuch' is not one of "
                             "in_process, dbos"))
        page = c.client.get(f"/threads/{thread_id}").text
        assert "data-turn-status='failed'" in page and "no run</span>" in page
        assert "<div data-compose><form" in page  # ended: the next turn can be typed
        r = c.post(f"/threads/{thread_id}/turns", {"text": "and another"})
        assert r.status_code == 409 and "SCALE001" in r.text  # refused again, not THREAD001
        assert [v.status for v in transcript.turns(c.harness, thread_id)] == ["failed"] * 2

        lost = asyncio.run(_left_unstarted(sessions, thread_id))
        for read_only in make_console(workspace, read_only=True):
            read_only.login()
            page = read_only.client.get(f"/threads/{thread_id}").text
            assert f"data-turn='{lost}' data-turn-status='interrupted'" in page
            assert c.harness.store.events(lost) == []  # shown so; a read-only console writes nothing
        page = c.client.get(f"/threads/{thread_id}").text  # this one records it
        assert f"data-turn='{lost}' data-turn-status='interrupted'" in page
        assert f"THREAD008: turn {lost} never started its run" in page
        assert [e.type for e in c.harness.store.events(lost)] == ["turn/ended"]


async def _left_unstarted(sessions: Any, thread_id: str) -> str:
    """A turn recorded, then let go by its process without starting it (as a crash does)."""
    turn = await sessions.begin_turn(thread_id, [{"type": "text", "text": "hi"}])
    turn.release()
    sessions.active.pop(thread_id, None)
    return str(turn.turn_id)
