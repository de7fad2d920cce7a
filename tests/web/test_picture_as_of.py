"""A run page's picture shows each node as of the last event the page was drawn with: the
page's stream resumes after that event, so a box drawn from node rows read later (and so
newer) would be moved back by the stream's replay (succeeded, then running again)."""

from __future__ import annotations

import re
from pathlib import Path

from rein.web import views
from tests.web.conftest import Console


def _status(svg: str, node: str) -> str:
    found = re.search(rf'data-node="{node}"[^>]*data-status="([a-z_]+)"', svg)
    assert found is not None, svg
    return found.group(1)


def test_the_picture_is_drawn_as_of_its_events_not_as_of_the_rows(
        console: Console, workspace: Path) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")  # work succeeds, the run waits at gate `ok`
    run = console.harness.run(run_id)
    events = console.harness.events(run_id)
    started = next(i for i, e in enumerate(events)
                   if e.type.startswith("node/") and e.payload.get("node") == "work"
                   and e.payload.get("status") == "running")

    early = views.run_picture(console.harness, run, "", events[:started + 1]).svg
    assert _status(early, "work") == "running"  # the rows already say succeeded
    assert _status(early, "ok") == "pending"

    now = views.run_picture(console.harness, run, "", events).svg
    assert _status(now, "work") == "succeeded"
    assert _status(now, "ok") != "pending"
