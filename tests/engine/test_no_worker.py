"""A graph of expression decisions, notify gates, a map, a repeat loop and an inline
subgraph runs to completion with no worker at all."""

from __future__ import annotations

from pathlib import Path

from rein.core.states import RunStatus
from rein.engine.run.record import build_record, record_problems
from tests.engine.helpers import GRAPHS, make_engine, run_graph


def test_runs_to_completion_without_a_worker(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    outcome = run_graph(engine, GRAPHS / "no-worker.agraph.yaml")
    record = build_record(engine.store, outcome.run_id)
    assert outcome.status is RunStatus.SUCCEEDED, record.get("diagnostics")
    assert record["outputs"] == {"labels": ["first", "other", "other"], "ticks": 3,
                                 "answer": "yes"}
    top = {n["node_id"]: n["status"] for n in record["nodes"] if "scope_path" not in n}
    assert top == {"choose": "succeeded", "announce": "succeeded", "fan": "succeeded",
                   "count": "succeeded", "inner": "succeeded", "slow_path": "skipped"}
    assert record_problems(record) == []
    [child] = engine.store.child_runs(outcome.run_id)
    child_record = build_record(engine.store, child.run_id)
    assert child_record["parent_run_id"] == outcome.run_id
    assert record_problems(child_record) == []
