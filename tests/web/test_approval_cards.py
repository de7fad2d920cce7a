"""An approval card in real Chromium: it names the gate and its node, shows a presented
Markdown text rendered (with raw HTML shown as text), the bound file as its change against
the last commit, drawn from the content the approval binds even once the file holds other
content, and the digest an answer binds, written as ``rein approvals show`` writes it;
nothing a run wrote becomes markup or script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import served, why_not
from tests.web.conftest import write_graph

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))

WAIT = 30_000  # ms: an upper bound on waiting, not a pause
HOSTILE = "<img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>"
NOTES = f"Ship **greet** now. {HOSTILE} [x](javascript:window.pwned=3)"
DOC = f"# Release notes\n\n- greet says *hello, world*\n\n{HOSTILE}\n"
REVIEWED = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/web-review", "title": "review",
    "objective": "test", "requires_conformance": 3, "entrypoints": ["ship"],
    "constraints": {"max_cost_usd": 1.0},
    "params": {"notes": {"type": "string", "description": "n", "default": NOTES},
               "file": {"type": "string", "description": "f", "default": "greet.py"},
               "doc": {"type": "string", "description": "d", "default": "notes.md"}},
    "nodes": {"ship": {"type": "gate", "title": "ship", "description": "Approve.",
                       "gate": {"mode": "approve", "prompt": f"Ship it? {HOSTILE}",
                                "present": ["params.notes", "params.file", "params.doc"]}}},
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=root, check=True, capture_output=True)


def test_a_card_names_its_gate_and_renders_what_is_reviewed(browser: Any,
                                                            workspace: Path) -> None:
    (workspace / "greet.py").write_text("print('hello')\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "greet.py")
    _git(workspace, "commit", "-q", "-m", "first")
    (workspace / "greet.py").write_text("print('hello, world')\n")
    (workspace / "notes.md").write_text(DOC)  # not committed: shown as its content
    write_graph(workspace, "review.agraph.yaml", REVIEWED)
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/plan?path=review.agraph.yaml")
        page.click("text=Approve and run")
        page.wait_for_url(f"{base}/runs/run-*", timeout=WAIT)
        page.goto(f"{base}/approvals")
        card = page.locator("[data-approval]")
        card.wait_for(timeout=WAIT)
        assert card.locator("[data-what]").inner_text() == "Gate"
        assert card.locator("[data-node]").inner_text() == "ship"
        assert "A gate of the graph" not in card.inner_text()
        # Markdown rendered; the raw HTML in it and in the prompt shown as text.
        assert card.locator(".presented .md strong").inner_text() == "greet"
        assert HOSTILE in card.locator(".presented .md").inner_text()
        doc = card.locator("[data-file='notes.md'] .md")
        assert doc.locator("h1").inner_text() == "Release notes"
        assert doc.locator("li em").inner_text() == "hello, world"
        assert HOSTILE in doc.inner_text()
        assert HOSTILE in card.locator("p.asks").inner_text()
        assert card.locator("img, script, a[href^='javascript']").count() == 0
        assert page.evaluate("window.pwned === undefined")
        # The bound file as its change, with its content digest; no request JSON.
        change = card.locator("[data-file='greet.py'] pre.diff")
        assert change.locator(".del").inner_text() == "-print('hello')"
        assert change.locator(".add").inner_text() == "+print('hello, world')"
        assert card.locator("[data-file='greet.py'] [data-file-digest]").inner_text(
        ).startswith("sha256:")
        assert '"present"' not in card.inner_text()
        digest = card.locator("[data-digest]").inner_text()
        # Other content put in the file while the card is read: the card still shows the
        # content the approval binds, drawn from its copy, and says the file differs now.
        (workspace / "greet.py").write_text("print('bye')\n")
        page.reload()
        bound = page.locator("[data-approval] [data-file='greet.py']")
        assert bound.locator("pre.diff .add").inner_text() == "+print('hello, world')"
        assert "bye" not in bound.inner_text()
        assert bound.locator("[data-file-now='changed']").count() == 1
    shown = subprocess.run(
        [sys.executable, "-c", "from rein.cli import run; run()", "approvals", "show",
         card_id(workspace)], cwd=workspace, text=True,
        capture_output=True, check=True).stdout
    assert f"digest   {digest} (what an answer binds" in shown


def card_id(workspace: Path) -> str:
    from rein.engine.service import Harness

    with Harness.open(workspace) as h:
        [row] = h.approvals()
        return str(row.approval_id)
