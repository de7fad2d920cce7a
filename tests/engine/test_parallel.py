"""Real parallelism: map items overlap up to min(max_parallel, max_parallel_nodes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import yaml

from rein.core.states import RunStatus
from rein.engine.run.record import build_record
from rein.workers.base import AttemptRequest, AttemptResult, Item
from tests.engine.helpers import make_engine, run_graph


class CountingWorker:
    """A test double that records how many attempts are in flight at once."""

    name = "counting"

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    def can_serve(self, request: AttemptRequest) -> bool:
        return True

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        self.now += 1
        self.peak = max(self.peak, self.now)
        for _ in range(3):  # yield control so siblings can start
            await asyncio.sleep(0)
        self.now -= 1
        yield AttemptResult(outputs={"n": request.inputs["n"] * 2})


def _graph(max_parallel: int, max_nodes: int) -> dict:
    return {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/map", "title": "map",
        "objective": "fan out", "requires_conformance": 3,
        "constraints": {"max_parallel_nodes": max_nodes, "max_cost_usd": 1.0},
        "params": {"xs": {"type": "array", "description": "x", "default": list(range(12))}},
        "entrypoints": ["fan"],
        "nodes": {"fan": {
            "type": "map", "title": "fan", "description": "Fan out.",
            "map": {"over": "params.xs", "as": "x", "max_items": 50,
                    "max_parallel": max_parallel,
                    "collect": {"doubled": "nodes.work.outputs.n"},
                    "body": {"title": "b", "entrypoints": ["work"], "nodes": {"work": {
                        "title": "work", "description": "Double it.",
                        "inputs": {"n": {"type": "integer", "description": "n", "from": "x"}},
                        "outputs": {"n": {"type": "integer", "description": "n"}}}}}}}},
        "outputs": {"doubled": {"type": "array", "description": "d",
                                "from": "nodes.fan.outputs.doubled"}},
    }


def _run(tmp: Path, max_parallel: int, max_nodes: int) -> tuple[CountingWorker, dict]:
    worker = CountingWorker()
    engine = make_engine(tmp, workers=(worker,))
    path = tmp / "map.agraph.yaml"
    path.write_text(yaml.safe_dump(_graph(max_parallel, max_nodes)))
    outcome = run_graph(engine, path)
    assert outcome.status is RunStatus.SUCCEEDED
    return worker, build_record(engine.store, outcome.run_id)


def test_map_items_really_overlap_and_collect_in_input_order(tmp_path: Path) -> None:
    worker, record = _run(tmp_path, max_parallel=4, max_nodes=8)
    assert worker.peak == 4
    assert record["outputs"]["doubled"] == [2 * i for i in range(12)]


def test_map_width_is_capped_by_max_parallel_nodes(tmp_path: Path) -> None:
    worker, _ = _run(tmp_path, max_parallel=6, max_nodes=2)
    assert worker.peak == 2
