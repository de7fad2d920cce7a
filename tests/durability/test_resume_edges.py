"""``edges_taken`` after ``resume_failed``: the record shows how the run actually went on.

A failed node run again resolves its outgoing edges again; the record keeps the latest
resolution of each edge (and the superseded ones as ``x-rein-superseded``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from rein.core.states import RunStatus
from rein.engine.run.record import build_record, record_problems
from rein.engine.run.runner import prepare
from rein.workers.scripted import ScriptedWorker
from tests.engine.helpers import make_engine


def _check(run: str) -> dict[str, Any]:
    return {"criteria": [{"id": "ok", "kind": "command", "description": run, "run": run}]}


GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/resume-edges",
    "title": "edges after resume_failed", "objective": "o", "requires_conformance": 3,
    "entrypoints": ["a"], "policy": {"resume": "resume_failed"},
    "nodes": {
        "a": {"title": "a", "description": "a."},
        "b": {"title": "b", "description": "b.", "depends_on": ["a"],
              "success": _check("test -f flag")},
        "c": {"title": "c", "description": "c.", "depends_on": ["b"]},
    },
}
SCRIPT = {"nodes": {n: [{"outputs": {}}] for n in ("a", "b", "c")}}


def _edges(record: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(e["from"], e["to"], e["active"]) for e in record["edges_taken"]]


def test_a_rerun_failed_node_records_its_latest_edges(tmp_path: Path) -> None:
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    engine = make_engine(tmp_path, workers=(ScriptedWorker(SCRIPT),))
    prepared = prepare(path, given={}, router=engine.router, env=engine.env)
    failed = asyncio.run(engine.start(prepared, approved=prepared.digest))
    assert failed.status is RunStatus.FAILED
    before = build_record(engine.store, failed.run_id)
    assert _edges(before) == [("a", "b", True), ("b", "c", False)]

    (tmp_path / "flag").write_text("b can pass now")
    assert asyncio.run(engine.resume(failed.run_id)).status is RunStatus.SUCCEEDED
    after = build_record(engine.store, failed.run_id)
    assert record_problems(after) == []
    assert _edges(after) == [("a", "b", True), ("b", "c", True)]
    [a_b, b_c] = after["edges_taken"]
    assert "x-rein-superseded" not in a_b  # a was adopted: its edge was not resolved again
    [old] = b_c["x-rein-superseded"]
    assert old["active"] is False and old["at"] <= b_c["at"]
    statuses = {n["node_id"]: n["status"] for n in after["nodes"]}
    assert statuses == {"a": "succeeded", "b": "succeeded", "c": "succeeded"}
