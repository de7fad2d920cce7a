"""A read-only console never writes to the store: every page it serves leaves the database
as it was, even with an approval whose timeout is due (which a writable console applies
when it shows the queue)."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
from pathlib import Path

from rein.engine.run.clock import StepClock
from rein.engine.service import Harness
from rein.store.sqlite import db_path
from tests.web.conftest import make_console, write_graph

DUE = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/web-due", "title": "due",
    "objective": "test", "requires_conformance": 3, "entrypoints": ["ok"],
    "nodes": {"ok": {"type": "gate", "title": "ok", "description": "Approve.",
                     "gate": {"mode": "approve", "prompt": "Go?", "timeout_seconds": 60,
                              "on_timeout": "approve"}}},
}


def _started_long_ago(root: Path) -> str:
    """A run waiting at a gate whose 60 s timeout passed long ago."""
    write_graph(root, "due.agraph.yaml", DUE)

    async def go() -> str:
        h = Harness.open(root, clock=StepClock(start=dt.datetime(2001, 1, 1, tzinfo=dt.UTC)))
        try:
            prepared = await h.prepare("due.agraph.yaml", given={})
            outcome = await h.start(prepared, approved=prepared.digest)
            assert outcome.status.value == "awaiting_human"
            return str(outcome.run_id)
        finally:
            h.close()

    return asyncio.run(go())


def _dump(root: Path) -> list[str]:
    """Every row of the database, read through a read-only connection."""
    with sqlite3.connect(f"file:{db_path(root)}?mode=ro", uri=True) as db:
        return list(db.iterdump())


def _browse(root: Path, run_id: str, *, read_only: bool) -> None:
    for console in make_console(root, read_only=read_only):
        console.login()
        for path in ("/", f"/runs/{run_id}", f"/runs/{run_id}/record", "/approvals",
                     f"/approvals?run={run_id}", "/plans", "/plan?path=due.agraph.yaml"):
            assert console.client.get(path).status_code == 200, path


def test_a_read_only_console_leaves_the_store_unchanged(workspace: Path) -> None:
    run_id = _started_long_ago(workspace)
    before = _dump(workspace)
    _browse(workspace, run_id, read_only=True)
    assert _dump(workspace) == before


def test_a_writable_console_applies_the_due_timeout_when_it_shows_the_queue(
        workspace: Path) -> None:
    # The scenario above is one where a write was due: a writable console makes it.
    run_id = _started_long_ago(workspace)
    before = _dump(workspace)
    _browse(workspace, run_id, read_only=False)
    assert _dump(workspace) != before
