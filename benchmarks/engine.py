"""Engine overhead: layered graphs of 100 and 1,000 task nodes with an instant scripted
worker, and a map of 200 items whose worker takes 50 ms with max_parallel 16.

Run: .venv/bin/python benchmarks/engine.py   (prints seconds and ms per node)
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import yaml

from rein.engine.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore
from rein.workers.base import AttemptRequest, AttemptResult, Item
from rein.workers.scripted import ScriptedWorker


def layered(n: int, width: int = 10) -> dict:
    nodes = {}
    for i in range(n):
        layer = i // width
        deps = [f"n{j}" for j in range((layer - 1) * width, layer * width)] if layer else []
        nodes[f"n{i}"] = {"title": f"n{i}", "description": "work", "depends_on": deps}
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": f"bench/layered-{n}",
            "title": "layered", "objective": "overhead", "requires_conformance": 3,
            "constraints": {"max_cost_usd": 1.0},
            "entrypoints": [f"n{i}" for i in range(min(width, n))], "nodes": nodes}


class Sleeper:
    name = "sleeper"

    def can_serve(self, request: AttemptRequest) -> bool:
        return True

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        await asyncio.sleep(0.05)
        yield AttemptResult(outputs={})


def mapped(items: int) -> dict:
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "bench/map", "title": "map",
            "objective": "parallel", "requires_conformance": 3,
            "constraints": {"max_parallel_nodes": 16, "max_cost_usd": 1.0},
            "params": {"xs": {"type": "array", "description": "x",
                              "default": list(range(items))}},
            "entrypoints": ["fan"],
            "nodes": {"fan": {"type": "map", "title": "fan", "description": "fan",
                              "map": {"over": "params.xs", "as": "x", "max_items": 10000,
                                      "max_parallel": 16,
                                      "body": {"title": "b", "entrypoints": ["w"], "nodes": {
                                          "w": {"title": "w", "description": "w"}}}}}}}


def timed(data: dict, worker: object) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.agraph.yaml"
        path.write_text(yaml.safe_dump(data))
        store = SQLiteStore.open(tmp)
        engine = Engine(workspace=Path(tmp), store=store, workers=(worker,))
        start = time.perf_counter()
        prepared = prepare(path, given={}, env={})
        outcome = engine.start(prepared, approved=prepared.digest)
        elapsed = time.perf_counter() - start
        assert outcome.status.value == "succeeded", outcome
        store.close()
        return elapsed


def main() -> None:
    for n in (100, 1000):
        data = layered(n)
        worker = ScriptedWorker({"nodes": {k: [{"outputs": {}}] for k in data["nodes"]}})
        t = timed(data, worker)
        print(f"layered {n:>5} nodes: {t:7.3f} s  ({1000 * t / n:6.2f} ms per node)")
    t = timed(mapped(200), Sleeper())
    print(f"map 200 x 50 ms, width 16: {t:6.3f} s  (ideal 0.625 s, ratio {t / 0.625:.2f})")


if __name__ == "__main__":
    main()
