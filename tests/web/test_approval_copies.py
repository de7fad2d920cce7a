"""An approval card shows the content the approval binds, not the file as it is now.

Whoever can write the workspace can put other content in a presented file while a person
reads the card, and the approved content back before the accept, which then finds the file
unchanged. So the card draws each file from the copy the approval keeps, says when the file
now holds other content, and, where no copy was kept, shows the file only when the bytes it
read have the bound digest.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import Console, make_console, write_graph

NOTES = "notes.txt"
APPROVED = "Deploy: wipe the production database\n"
BENIGN = "Deploy: tidy the documentation\n"
SHOWN = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/web-copies", "title": "copies",
    "objective": "test", "requires_conformance": 3, "constraints": {"max_cost_usd": 1.0},
    "entrypoints": ["ship"],
    "nodes": {"ship": {"type": "gate", "title": "ship", "description": "Approve.",
                       "gate": {"mode": "approve", "prompt": "Ship it?",
                                "present": [f"'{NOTES}'", "'greet.py'"]}}},
}


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=root, check=True, capture_output=True)


def _waiting(console: Console) -> Any:
    write_graph(console.root, "shown.agraph.yaml", SHOWN)
    console.login()
    console.start("shown.agraph.yaml")
    [row] = console.pending()
    return row


def _card(page: str, name: str) -> str:
    """The part of the page that shows the file ``name``."""
    start = page.index(f"<div class='file' data-file='{name}'>")
    end = page.find("<div class='file' data-file=", start + 1)
    return page[start:end if end > 0 else None]


def _edit_request(root: Path, approval_id: str, edit: Any) -> None:
    with sqlite3.connect(root / ".rein" / "rein.db") as db:
        [(text,)] = db.execute("SELECT request FROM approvals WHERE approval_id = ?",
                               (approval_id,)).fetchall()
        request = json.loads(text)
        edit(request)
        db.execute("UPDATE approvals SET request = ? WHERE approval_id = ?",
                   (json.dumps(request), approval_id))


@pytest.fixture
def swapped(workspace: Path) -> Iterator[Console]:
    (workspace / NOTES).write_text(APPROVED)
    (workspace / "greet.py").write_text("print(1)\n")
    yield from make_console(workspace)


def test_the_card_shows_the_bound_content_while_the_file_is_swapped(
        swapped: Console) -> None:
    console = swapped
    row = _waiting(console)
    (console.root / NOTES).write_text(BENIGN)  # while the person reads
    for page in (console.client.get("/approvals").text,
                 console.client.get(f"/runs/{row.run_id}").text):
        shown = _card(page, NOTES)
        assert APPROVED.strip() in shown and "tidy" not in shown
        assert "data-file-shown='presented'" in shown
        assert "data-file-now='changed'" in shown and _sha(BENIGN) in shown
        assert f"data-file-digest>{_sha(APPROVED)}</code>" in shown
        assert "APPROVAL_STALE" in shown
    (console.root / NOTES).write_text(APPROVED)  # put back before the accept
    shown = _card(console.client.get("/approvals").text, NOTES)
    assert APPROVED.strip() in shown and "data-file-now='same'" in shown
    r = console.post(f"/approvals/{row.approval_id}", {"action": "accept",
                                                       "digest": row.digest})
    assert r.status_code == 303  # the person accepted what the card showed them


def test_the_change_is_drawn_from_the_bound_content(workspace: Path) -> None:
    (workspace / NOTES).write_text(APPROVED)
    (workspace / "greet.py").write_text("print(1)\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "greet.py")
    _git(workspace, "commit", "-q", "-m", "first")
    (workspace / "greet.py").write_text("print(2)\n")  # the change the approval binds
    for console in make_console(workspace):
        _waiting(console)
        (workspace / "greet.py").write_text("print(3)\n")
        shown = _card(console.client.get("/approvals").text, "greet.py")
        assert "<span class='del'>-print(1)</span>" in shown
        assert "<span class='add'>+print(2)</span>" in shown
        assert "print(3)" not in shown and "data-file-now='changed'" in shown
        (workspace / "greet.py").write_text("print(1)\n")  # as committed: no change now
        shown = _card(console.client.get("/approvals").text, "greet.py")
        assert "<span class='add'>+print(2)</span>" in shown


def test_without_a_copy_the_file_is_shown_only_as_it_is_now_with_the_bound_digest(
        swapped: Console) -> None:
    """An approval asked before copies were kept: the live file, said to be the file as it
    is now, only when the bytes read have the bound digest."""
    console = swapped
    row = _waiting(console)
    _edit_request(console.root, row.approval_id, lambda req: req.pop("contents"))
    shown = _card(console.client.get("/approvals").text, NOTES)
    assert "data-file-shown='none'" in shown
    assert escape("the content as it was presented cannot be shown") in shown
    assert "the file as it is now, read for this page, has that digest" in shown
    assert APPROVED.strip() in shown
    (console.root / NOTES).write_text(BENIGN)
    shown = _card(console.client.get("/approvals").text, NOTES)
    assert "data-file-shown='none'" in shown and "data-file-now='changed'" in shown
    assert "tidy" not in shown and "wipe" not in shown


def test_a_copy_edited_in_the_store_is_not_shown(swapped: Console) -> None:
    console = swapped
    row = _waiting(console)
    _edit_request(console.root, row.approval_id,
                  lambda req: req["contents"].__setitem__(NOTES, BENIGN))
    shown = _card(console.client.get("/approvals").text, NOTES)
    assert "data-file-shown='altered'" in shown and "APPROVAL009" in shown
    assert "tidy" not in shown and "wipe" not in shown
    assert "data-file-now='same'" in shown  # the file itself still holds the bound content


def test_a_secret_in_a_bound_file_does_not_reach_the_page(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "hunter2-the-deploy-key"
    monkeypatch.setenv("REIN_SECRET_DEPLOY", secret)
    (workspace / NOTES).write_text(f"key = {secret}\n")
    (workspace / "greet.py").write_text(f"KEY = '{secret}'\n")
    for console in make_console(workspace):
        row = _waiting(console)
        page = console.client.get("/approvals").text
        assert secret not in page
        # The store redacted the copy: it is not the bound content, and is not shown.
        assert "data-file-shown='altered'" in _card(page, NOTES)
        _edit_request(workspace, row.approval_id, lambda req: req.pop("contents"))
        page = console.client.get("/approvals").text
        assert secret not in page  # the file as it is now, its secret redacted
        shown = _card(page, NOTES)
        assert "the file as it is now" in shown and "key = [secret:deploy]" in shown
        assert "data-redacted" in shown


def test_drawing_the_change_runs_nothing_the_repository_configures(workspace: Path) -> None:
    """Whoever writes the workspace may write ``.git/config``: the change against the last
    commit is read with plumbing, so no textconv, filter or fsmonitor it names runs in the
    console's process."""
    ran = workspace / "ran"
    (workspace / NOTES).write_text(APPROVED)
    (workspace / "greet.py").write_text("print(1)\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "greet.py")
    _git(workspace, "commit", "-q", "-m", "first")
    (workspace / ".gitattributes").write_text("*.py diff=shown filter=shown\n")
    for key, value in (("diff.shown.textconv", f"sh -c 'touch {ran}; cat \"$0\"'"),
                       ("filter.shown.clean", f"sh -c 'touch {ran}; cat'"),
                       ("core.fsmonitor", f"sh -c 'touch {ran}'")):
        _git(workspace, "config", key, value)
    (workspace / "greet.py").write_text("print(2)\n")
    for console in make_console(workspace):
        _waiting(console)
        shown = _card(console.client.get("/approvals").text, "greet.py")
        assert "<span class='add'>+print(2)</span>" in shown
    assert not ran.exists()
