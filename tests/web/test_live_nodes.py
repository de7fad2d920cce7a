"""Nodes that first appear mid-run: the run page's fragment gives a live page the rows of the
node keys it has not got (and, asked, the picture drawn again), with the last event it
reflects, so the page applies again only what came after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.web.conftest import Console, write_graph
from tests.web.live_graphs import MAPPED


def _fragment(console: Console, run_id: str, **query: str) -> dict[str, Any]:
    r = console.client.get(f"/runs/{run_id}/fragment", params=query)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return dict(json.loads(r.text))


def test_the_rows_of_map_items_come_in_the_order_the_run_met_them(
        console: Console, workspace: Path) -> None:
    write_graph(workspace, "m.agraph.yaml", MAPPED)
    console.login()
    run_id = console.start_with({"path": "m.agraph.yaml", "digest": console.digest(
        "m.agraph.yaml"), "param.pages": '["a", "b", "c"]'})
    page = console.client.get(f"/runs/{run_id}").text
    assert 'data-node-detail="fan[0].label"' not in page  # not started yet
    seen = console.harness.events(run_id)[-1].seq
    (row,) = console.pending()
    console.post(f"/approvals/{row.approval_id}", {"action": "accept", "digest": row.digest})
    assert console.steering is not None and console.steering.idle(60)

    keys = "fan[2].label,fan[0].label,nothing.here,fan[1].label"
    got = _fragment(console, run_id, keys=keys, after=str(seen))
    assert list(got["nodes"]) == ["fan[0].label", "fan[1].label", "fan[2].label"]
    assert 'data-node-detail="fan[1].label"' in got["nodes"]["fan[1].label"]
    assert got["last"] == console.harness.events(run_id)[-1].seq
    assert got["svg"] is None  # not asked for: a map item needs no new picture

    drawn = _fragment(console, run_id, svg="1", keys="")
    assert 'data-count-of="fan"' in drawn["svg"] and "3 ran" in drawn["svg"]
    assert drawn["nodes"] == {}


def test_the_fragment_needs_the_session_and_a_known_run(console: Console) -> None:
    assert console.client.get("/runs/run-nope/fragment").status_code == 401
    console.login()
    assert console.client.get("/runs/run-nope/fragment").status_code == 404
