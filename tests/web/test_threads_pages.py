"""The threads list and a thread's page over HTTP: the conversation from the feed, its
question answered in the page bound to the digest shown, the guard's rules, and 404s."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rein.protocol import transcript
from rein.web import pages_threads
from tests.web.conftest import Console, make_console
from tests.web.test_states import wrong
from tests.web.threads_env import COMMAND, configure, waiting_thread

# A user hook at the start of every session: its run is an item of the conversation.
HOOK = ('[hooks.hello]\ncommand = ["sh", "-c", "echo \'{\\"systemMessage\\": '
        '\\"hello from a hook\\"}\'"]\nevents = ["SessionStart"]\n')


@pytest.fixture
def threaded(workspace: Path) -> tuple[Path, str, str]:
    Path(os.environ["REIN_USER_CONFIG"]).write_text(HOOK)
    configure(workspace)
    thread_id, approval_id = waiting_thread(workspace)
    return workspace, thread_id, approval_id


@pytest.fixture
def console(threaded: tuple[Path, str, str]) -> Iterator[Console]:
    yield from make_console(threaded[0])


def _ids(threaded: tuple[Path, str, str]) -> tuple[str, str]:
    return threaded[1], threaded[2]


def test_the_list_shows_each_thread_with_its_settings(console: Console,
                                                      threaded: tuple[Path, str, str]) -> None:
    thread_id, _ = _ids(threaded)
    console.login()
    r = console.client.get("/threads")
    assert r.status_code == 200
    row = r.text.split(f"/threads/{thread_id}", 1)[1].split("</tr>", 1)[0]
    assert "web thread" in row and "waiting" in row  # on the command's approval
    assert "workspaceWrite" in row and "on-request" in row
    assert str(console.root) in row
    assert 'data-runs-stream="/threads.stream"' in r.text
    assert wrong(r.text) == []  # one vocabulary of states (tests/web/test_states.py)
    assert thread_id not in console.client.get("/threads?archived=1").text
    console.harness.sessions.update(thread_id, archived=True)
    assert thread_id in console.client.get("/threads?archived=1").text
    assert thread_id not in console.client.get("/threads").text


def test_the_thread_page_is_the_feed_with_its_question(console: Console,
                                                       threaded: tuple[Path, str, str]) -> None:
    thread_id, approval_id = _ids(threaded)
    console.login()
    r = console.client.get(f"/threads/{thread_id}")
    assert r.status_code == 200
    [view] = transcript.turns(console.harness, thread_id)
    # Every item the feed has is drawn, in its order, and the open question with the
    # digest the feed carries (the approval entry's).
    positions = [r.text.index(f"data-item='{i['id']}'") for i in view.items]
    assert [i["type"] for i in view.items] == ["userMessage", "hookRun", "agentMessage",
                                               "commandExecution"]
    assert positions == sorted(positions)
    hook = r.text.split("data-type='hookRun'", 1)[1].split("data-type=", 1)[0]
    assert "sessionStart" in hook and "hello from a hook" in hook and "completed" in hook
    assert "I will run the command first." in r.text
    [asked] = view.pending
    entry = console.harness.store.get_approval(approval_id)
    assert entry is not None and asked.digest == entry.digest
    assert f"data-question='{approval_id}'" in r.text and entry.digest in r.text
    assert f"action=\"/threads/{thread_id}/approvals/{approval_id}\"" in r.text
    assert f"$ {COMMAND}" in r.text
    assert f'data-thread-stream="/runs/{view.run_id}/events?after={view.last_seq}"' in r.text
    assert f"href='/runs/{view.run_id}'" in r.text  # the turn's run page
    assert wrong(r.text) == []


def test_answering_in_the_page_runs_the_command_and_completes_the_turn(
        console: Console, threaded: tuple[Path, str, str]) -> None:
    thread_id, approval_id = _ids(threaded)
    console.login()
    entry = console.harness.store.get_approval(approval_id)
    assert entry is not None
    r = console.post(f"/threads/{thread_id}/approvals/{approval_id}",
                     {"action": "accept", "digest": entry.digest})
    assert r.status_code == 303 and r.headers["location"] == f"/threads/{thread_id}"
    assert console.steering is not None and console.steering.idle(60)
    [view] = transcript.turns(console.harness, thread_id)
    assert view.status == "completed" and view.pending == ()
    page = console.client.get(f"/threads/{thread_id}").text
    command = page.split("data-type='commandExecution'", 1)[1].split("data-type=", 1)[0]
    assert "web-console-was-here" in command.split("<pre tabindex='0' class='output'>", 1)[1]
    assert "data-type='commandExecution' data-status='completed'" in page
    assert "<span class='add'>+one</span>" in page  # the file change's diff
    assert "All done." in page and "data-question=" not in page
    assert wrong(page) == []
    assert (console.root / "notes.txt").read_text() == "one\ntwo\n"
    # The turn is over: the page no longer follows its run.
    assert "data-thread-stream" not in page


def test_a_stale_digest_is_refused_in_the_page_and_nothing_is_recorded(
        console: Console, threaded: tuple[Path, str, str]) -> None:
    thread_id, approval_id = _ids(threaded)
    console.login()
    r = console.post(f"/threads/{thread_id}/approvals/{approval_id}",
                     {"action": "accept", "digest": "sha256:" + "0" * 64})
    assert r.status_code == 409 and "APPROVAL_STALE" in r.text
    entry = console.harness.store.get_approval(approval_id)
    assert entry is not None and entry.status.value == "pending"


def test_the_turn_section_and_the_watch_stream(console: Console,
                                               threaded: tuple[Path, str, str]) -> None:
    thread_id, _ = _ids(threaded)
    console.login()
    [view] = transcript.turns(console.harness, thread_id)
    r = console.client.get(f"/threads/{thread_id}/turns/{view.turn_id}")
    assert r.status_code == 200 and r.text.startswith(f"<section class='turn' data-turn="
                                                      f"'{view.turn_id}'")
    assert "<html" not in r.text
    page = console.client.get(f"/threads/{thread_id}").text
    assert r.text in page  # the section swapped in live is the one a reload draws


def test_unknown_threads_turns_and_questions_are_404(console: Console,
                                                     threaded: tuple[Path, str, str]) -> None:
    thread_id, approval_id = _ids(threaded)
    console.login()
    for path in ("/threads/thr-nope", f"/threads/{thread_id}/turns/turn-nope",
                 "/threads/thr-nope/watch", "/threads/%2E%2E", "/threads/thr-%00"):
        r = console.client.get(path)
        assert r.status_code == 404, path
        assert "THREAD404" in r.text and "<header class=\"top\">" in r.text
    # An id is one path segment, looked up in the store: nothing is read from disk.
    for path in ("/threads/..%2F..%2Fetc%2Fpasswd", f"/threads/{thread_id}/turns/..%2F..%2F"):
        r = console.client.get(path)
        assert r.status_code == 404 and "root:" not in r.text, path
    r = console.post("/threads/thr-nope/approvals/" + approval_id,
                     {"action": "accept", "digest": "x"})
    assert r.status_code == 404
    other = console.harness.sessions.start_thread(name="other")
    r = console.post(f"/threads/{other.thread_id}/approvals/{approval_id}",
                     {"action": "accept", "digest": "x"})
    assert r.status_code == 404 and "WEB430" in r.text  # not a question of that thread
    r = console.post(f"/threads/{thread_id}/approvals/{approval_id}", {"action": "maybe"})
    assert r.status_code == 400


def test_the_guard_covers_the_thread_routes(console: Console,
                                            threaded: tuple[Path, str, str]) -> None:
    thread_id, approval_id = _ids(threaded)
    for path in ("/threads", f"/threads/{thread_id}", "/threads.stream",
                 f"/threads/{thread_id}/watch"):
        assert console.client.get(path).status_code == 401, path  # no session yet
    console.login()
    entry = console.harness.store.get_approval(approval_id)
    assert entry is not None
    url = f"/threads/{thread_id}/approvals/{approval_id}"
    form = {"action": "accept", "digest": entry.digest}
    assert console.post(url, form, csrf=False).status_code == 403
    assert console.post(url, form, origin="http://evil.example").status_code == 403
    assert console.harness.store.get_approval(approval_id).status.value == "pending"


def test_read_only_shows_the_question_without_a_form(threaded: tuple[Path, str, str]) -> None:
    root, thread_id, approval_id = threaded
    for c in make_console(root, read_only=True):
        c.login()
        page = c.client.get(f"/threads/{thread_id}").text
        assert f"data-question='{approval_id}'" in page and "<form" not in page
        entry = c.harness.store.get_approval(approval_id)
        assert entry is not None
        r = c.post(f"/threads/{thread_id}/approvals/{approval_id}",
                   {"action": "accept", "digest": entry.digest})
        assert r.status_code == 403 and "WEB403" in r.text
        assert c.harness.store.get_approval(approval_id).status.value == "pending"


def _first_frame(c: Console, handler: Any, **params: str) -> dict[str, Any]:
    """The first message a stream route sends (the routes stream until the client goes)."""
    from starlette.requests import Request

    scope = {"type": "http", "method": "GET", "path": "/", "headers": [],
             "query_string": b"", "path_params": params}

    async def first() -> str:
        response: Any = await handler(c.client.app.state.console, Request(scope))
        body = response.body_iterator
        try:
            return str(await body.__anext__())
        finally:
            await body.aclose()

    text = asyncio.run(first())
    assert text.startswith("event: runs\ndata: ")
    return dict(json.loads(text.split("data: ", 1)[1]))


def test_the_list_stream_and_the_watch_stream_send_what_the_pages_drew(
        console: Console, threaded: tuple[Path, str, str]) -> None:
    thread_id, _ = _ids(threaded)
    console.login()
    rows = _first_frame(console, pages_threads.threads_stream)["html"]
    assert f"/threads/{thread_id}" in rows and "waiting" in rows
    key = _first_frame(console, pages_threads.watch, thread_id=thread_id)["html"]
    [view] = transcript.turns(console.harness, thread_id)
    assert key == f"{view.turn_id}={view.run_id}"
    page = console.client.get(f"/threads/{thread_id}").text
    assert f'data-watch-key="{key}"' in page
