"""A thread in real headless Chromium against a real ``rein serve``: a conversation turn of
the scripted provider waits on a command; the command is accepted in the page, and another
tab left open on the thread (never reloaded) draws the command's output, the file change
and the final answer as they happen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import served, why_not
from tests.web.threads_env import configure, waiting_thread

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))

WAIT = 30_000  # ms: an upper bound on waiting, not a pause
ITEM = "div.item[data-type='{}'][data-status='{}']"


def test_a_threads_question_is_answered_in_the_page_and_its_items_arrive_live(
        browser: Any, workspace: Path) -> None:
    configure(workspace)
    thread_id, approval_id = waiting_thread(workspace, name="browser thread")
    with served(workspace) as url:
        base = url.split("/?")[0]
        context = browser.new_context()
        watcher = context.new_page()
        watcher.goto(url)
        watcher.click("text=Threads")
        watcher.wait_for_selector("#runs >> text=browser thread", timeout=WAIT)
        watcher.click("text=browser thread")
        watcher.wait_for_selector(f"[data-question='{approval_id}']", timeout=WAIT)
        assert watcher.locator(ITEM.format("userMessage", "")).count() == 1
        assert "I will run the command first." in watcher.inner_text(".conversation")
        assert watcher.locator(ITEM.format("commandExecution", "inProgress")).count() == 1
        assert watcher.inner_text("[data-thread-status]") == "waiting"
        watcher.evaluate("window.notReloaded = true")

        answering = context.new_page()
        answering.goto(f"{base}/threads/{thread_id}")
        answering.click(f"[data-question='{approval_id}'] button[value=accept]")
        answering.wait_for_url(f"{base}/threads/{thread_id}", timeout=WAIT)

        # The open tab follows the turn's run: each item as the feed completes it.
        watcher.wait_for_selector(ITEM.format("commandExecution", "completed"), timeout=WAIT)
        watcher.wait_for_selector(ITEM.format("fileChange", "completed"), timeout=WAIT)
        watcher.wait_for_selector("section.turn[data-turn-status='completed']", timeout=WAIT)
        watcher.wait_for_selector("[data-thread-status] .status[data-state=idle]", timeout=WAIT)
        text = watcher.inner_text(".conversation")
        assert "web-console-was-here" in text and "All done." in text and "+one" in text
        assert watcher.locator(f"[data-question='{approval_id}']").count() == 0
        assert watcher.evaluate("window.notReloaded") is True
        # A reload draws the same conversation the live tab built.
        live = watcher.inner_text(".conversation")
        watcher.reload()
        watcher.wait_for_selector("section.turn[data-turn-status='completed']", timeout=WAIT)
        assert watcher.inner_text(".conversation") == live
        assert (workspace / "notes.txt").read_text() == "one\ntwo\n"
        context.close()


def test_a_turn_typed_in_the_page_runs_and_its_question_is_answered_there(
        browser: Any, workspace: Path) -> None:
    import rein

    configure(workspace)
    with rein.Harness.open(workspace) as harness:
        thread_id = harness.sessions.start_thread(name="typed in the page").thread_id
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/threads/{thread_id}")
        page.fill("textarea[name=text]", "run the command, then write notes.txt")
        page.click("form.compose button")
        page.wait_for_selector("[data-question] button[value=accept]", timeout=WAIT)
        assert "run the command, then write notes.txt" in page.inner_text(".conversation")
        page.click("[data-question] button[value=accept]")
        page.wait_for_selector("section.turn[data-turn-status='completed']", timeout=WAIT)
        assert "All done." in page.inner_text(".conversation")
        page.wait_for_selector("form.compose textarea", timeout=WAIT)  # ready for the next
        page.close()
