"""A run's state is what the store holds: ``read_state`` gives a pass of the run the node
rows replay adopts (as the resume policy says), the edges already resolved and the run's
approval entries; nothing else of it outlives the pass."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from rein.core.states import NodeStatus, RunStatus
from rein.engine.run.execution import read_state
from rein.engine.run.runner import prepare
from rein.workers.scripted import ScriptedWorker

from .helpers import make_engine

GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/run-state", "title": "t",
    "objective": "o", "requires_conformance": 3, "entrypoints": ["a"],
    "nodes": {"a": {"title": "a", "description": "a."},
              "b": {"title": "b", "description": "b.", "depends_on": ["a"]}},
}


def test_a_paused_run_s_state_is_read_back_from_the_store(tmp_path: Path) -> None:
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    # Only a is served: b waits for a worker, and the run pauses.
    engine = make_engine(tmp_path, workers=(ScriptedWorker({"nodes": {"a": [{}]}}),))
    prepared = prepare(path, given={}, router=engine.router, env=engine.env)
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    assert outcome.status is RunStatus.WAITING
    state = read_state(engine.store, outcome.run_id, "resume_incomplete")
    assert {k: row.status for k, row in state.memo.items()} == {
        "a": NodeStatus.SUCCEEDED, "b": NodeStatus.RUNNING}
    assert state.edges_seen == {("", "a", "b", "sequence")}
    [graph] = state.approvals.values()  # the approval the run started under
    assert (graph.kind.value, graph.status.value) == ("graph", "accepted")
    assert state.diagnostics == [] and state.budget_stop is None
    engine.store.close()
