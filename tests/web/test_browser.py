"""End to end in real headless Chromium against a real ``rein serve``: run a graph from the
plan view, watch nodes change colour live, answer gates in the page, reload mid-run and get
the same feed, download the record, and see a stale approval refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import served, why_not

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))

NODE = 'svg.dag g.node[data-node="{}"][data-status="{}"]'
WAIT = 30_000  # ms: an upper bound on waiting, not a pause


def _log(page: Any) -> list[str]:
    return [str(t) for t in page.locator("ol.log li").all_inner_texts()]


def test_run_watch_answer_reload_download(browser: Any, workspace: Path) -> None:
    with served(workspace) as url:
        base = url.split("/?")[0]
        context = browser.new_context(accept_downloads=True)
        run_tab = context.new_page()
        run_tab.goto(url)
        assert run_tab.locator("h1").inner_text() == "Runs"
        runs_tab = context.new_page()  # the list, left open: it follows the store
        runs_tab.goto(f"{base}/")
        run_tab.goto(f"{base}/plan?path=g.agraph.yaml")
        run_tab.click("text=Approve and run")
        run_tab.wait_for_url(f"{base}/runs/run-*", timeout=WAIT)
        run_id = run_tab.url.rsplit("/", 1)[-1]
        runs_tab.wait_for_selector(f"#runs >> text={run_id}", timeout=WAIT)
        run_tab.wait_for_selector(NODE.format("ok", "awaiting_human"), timeout=WAIT)
        run_tab.wait_for_function("document.body.getAttribute('data-last-seq') !== null")

        queue = context.new_page()
        queue.goto(f"{base}/approvals")
        queue.click("form.answer button[value=accept]")
        queue.wait_for_url(f"{base}/runs/{run_id}", timeout=WAIT)
        # The run tab was not reloaded: the change arrives over the event stream.
        run_tab.wait_for_selector(NODE.format("ok", "succeeded"), timeout=WAIT)
        run_tab.wait_for_selector(NODE.format("ask", "awaiting_human"), timeout=WAIT)
        assert run_tab.locator('path.edge.taken[data-from="ok"][data-to="ask"]').count() == 1

        # A reload mid-run shows exactly the feed the live tab had built.
        before = _log(run_tab)
        run_tab.reload()
        run_tab.wait_for_selector(NODE.format("ask", "awaiting_human"), timeout=WAIT)
        assert _log(run_tab) == before

        queue.goto(f"{base}/approvals")
        queue.fill("input[name='value.count']", "3")
        queue.click("form.answer button[value=accept]")
        run_tab.wait_for_selector(NODE.format("ask", "succeeded"), timeout=WAIT)
        run_tab.wait_for_selector("[data-run-status][data-state=succeeded]", timeout=WAIT)
        assert len(_log(run_tab)) > len(before)

        with run_tab.expect_download() as info:
            run_tab.click("text=download the run record")
        record = json.loads(Path(info.value.path()).read_text())
        assert record["run_id"] == run_id and record["status"] == "succeeded"
        context.close()


def test_a_stale_page_cannot_approve_a_changed_graph(browser: Any, workspace: Path) -> None:
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/plan?path=g.agraph.yaml")
        page.click("text=Approve and run")
        page.wait_for_selector(NODE.format("ok", "awaiting_human"), timeout=WAIT)
        page.goto(f"{base}/approvals")
        graph = workspace / "g.agraph.yaml"
        graph.write_text(graph.read_text().replace("Ship it?", "Ship something else?"))
        page.click("form.answer button[value=accept]")
        alert = page.locator("[role=alert]")
        assert "RT053" in alert.inner_text() and "was not recorded" in alert.inner_text()
        assert page.locator("form.answer").count() == 1  # still pending
        # The plan view, shown before the file changed, cannot start the changed file.
        graph.write_text(graph.read_text().replace("Ship something else?", "Ship it?"))
        page.goto(f"{base}/plan?path=g.agraph.yaml")
        graph.write_text(graph.read_text().replace("Ship it?", "Ship it later?"))
        page.click("text=Approve and run")
        assert "APPROVAL_STALE" in page.locator("[role=alert]").inner_text()
        page.close()


@pytest.fixture
def ask_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model-worker node (the scripted provider) whose file_write is in ``ask``."""
    from tests.scenarios.model_env import call, graph, isolate, task

    isolate(tmp_path, monkeypatch)
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    (tmp_path / "turns.json").write_text(json.dumps([
        call("file_write", path="NOTE.md", content="hello from the page\n"),
        call("submit_outputs", summary="finished")]))
    (tmp_path / "rein.toml").write_text(
        '[providers.script]\nkind = "scripted"\n'
        'options = { script = "turns.json", position = "conversation" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "s"\n\n[policy]\nedit = "ask"\n')
    node = task("Write the note", tools=["file_write"], permissions=["fs:write:NOTE.md"],
                outputs={"summary": "what"})
    import yaml

    (tmp_path / "m.agraph.yaml").write_text(
        yaml.safe_dump(graph("ask", {"write_note": node}, "write_note"), sort_keys=False))
    return tmp_path


def test_a_tool_call_in_ask_is_answered_in_the_page(browser: Any, ask_workspace: Path) -> None:
    with served(ask_workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/plan?path=m.agraph.yaml")
        page.click("text=Approve and run")
        page.wait_for_selector(NODE.format("write_note", "awaiting_human"), timeout=WAIT)
        assert not (ask_workspace / "NOTE.md").exists()
        page.goto(f"{base}/approvals")
        card = page.locator("[data-approval]")
        assert "A tool call under an ask permission" in card.inner_text()
        # What the call does is on the card itself, not folded away.
        assert "file_write" in card.inner_text() and "NOTE.md" in card.inner_text()
        page.click("form.answer button[value=accept]")
        page.wait_for_selector(NODE.format("write_note", "succeeded"), timeout=WAIT)
        assert (ask_workspace / "NOTE.md").read_text() == "hello from the page\n"
        page.close()


HIDE = """(hidden) => {
  Object.defineProperty(document, 'hidden', {value: hidden, configurable: true});
  document.dispatchEvent(new Event('visibilitychange'));
}"""


def test_a_hidden_tab_lets_its_stream_go_and_catches_up_when_shown(
        browser: Any, workspace: Path) -> None:
    with served(workspace) as url:
        base = url.split("/?")[0]
        context = browser.new_context()
        tab = context.new_page()
        tab.goto(url)
        tab.goto(f"{base}/plan?path=g.agraph.yaml")
        tab.click("text=Approve and run")
        tab.wait_for_selector(NODE.format("ok", "awaiting_human"), timeout=WAIT)
        run_url = tab.url
        tab.evaluate(HIDE, True)
        other = context.new_page()
        other.goto(f"{base}/approvals")
        other.click("form.answer button[value=accept]")
        other.wait_for_selector(NODE.format("ask", "awaiting_human"), timeout=WAIT)
        # Its stream was closed before the answer: the hidden tab has not seen it.
        assert tab.locator(NODE.format("ok", "awaiting_human")).count() == 1
        tab.evaluate(HIDE, False)
        tab.wait_for_selector(NODE.format("ask", "awaiting_human"), timeout=WAIT)
        assert tab.url == run_url
        assert _log(tab) == _log(other)  # caught up with exactly the same feed
        context.close()
