"""A thread's questions answered in real headless Chromium against a real ``rein serve``:
a graph turn's input gate takes the value it declares from a field of its card, and a
command's question is accepted for the session. What counts is what the store records: the
gate's typed value and the run it let finish, the accepted entry and the action digest kept
on the thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rein
from tests.web.browser import served, why_not
from tests.web.test_threads_graph import _graph_turn_at_its_gate
from tests.web.threads_env import configure, waiting_thread

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))

WAIT = 30_000  # ms: an upper bound on waiting, not a pause


def test_a_graph_turns_input_gate_is_answered_with_its_value_in_the_page(
        browser: Any, workspace: Path) -> None:
    thread_id, ok = _graph_turn_at_its_gate(workspace)
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/threads/{thread_id}")
        page.click(f"[data-question='{ok}'] button[value=accept]")
        page.wait_for_url(f"{base}/threads/{thread_id}", timeout=WAIT)
        # The next gate, `ask`, collects an integer `count`: its card has the field.
        field = "[data-question] input[name='value.count'][data-type='integer']"
        page.wait_for_selector(field, timeout=WAIT)
        with rein.Harness.open(workspace) as harness:
            [ask] = harness.approvals()
        assert page.locator(f"[data-question='{ask.approval_id}'] input[name='value.count']"
                            ).count() == 1
        page.fill(field, "3")
        page.click(f"[data-question='{ask.approval_id}'] button[value=accept]")
        page.wait_for_selector("section.turn[data-turn-status='completed']", timeout=WAIT)
        page.close()
    with rein.Harness.open(workspace) as harness:
        stored = harness.store.get_approval(ask.approval_id)
        assert stored is not None and stored.answer is not None
        assert stored.status.value == "accepted"
        assert stored.answer["values"] == {"count": 3}  # typed by the declared integer
        assert harness.run(stored.run_id).status.value == "succeeded"


def test_a_command_is_accepted_for_the_session_in_the_page(
        browser: Any, workspace: Path) -> None:
    configure(workspace)
    thread_id, approval_id = waiting_thread(workspace, name="session thread")
    with rein.Harness.open(workspace) as harness:
        entry = harness.store.get_approval(approval_id)
        assert entry is not None
        action = str(entry.request["action_digest"])
        assert harness.sessions.accepted_for_session(thread_id) == frozenset()
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/threads/{thread_id}")
        card = f"[data-question='{approval_id}']"
        page.click(f"{card} button[value=acceptForSession]")
        page.wait_for_url(f"{base}/threads/{thread_id}", timeout=WAIT)
        page.wait_for_selector("section.turn[data-turn-status='completed']", timeout=WAIT)
        page.close()
    with rein.Harness.open(workspace) as harness:
        stored = harness.store.get_approval(approval_id)
        assert stored is not None and stored.status.value == "accepted"
        assert harness.sessions.accepted_for_session(thread_id) == frozenset({action})
    assert (workspace / "notes.txt").read_text() == "one\ntwo\n"  # the turn went on
