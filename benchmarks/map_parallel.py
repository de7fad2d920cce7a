"""Map parallelism: 200 items, 50 ms of work each, 16 at a time.

One map node whose body is a single task, ``max_parallel: 16`` and
``constraints.max_parallel_nodes: 16``, served by the scripted worker with
``delay_seconds: 0.05`` (an asyncio sleep, so the 50 ms are waiting, as a model call is).
The ideal is 200 / 16 x 50 ms = 0.625 s; as items start in waves of 16, 13 waves (0.650 s)
is the real floor. The engine runs in this process, in a fresh temporary workspace with its
own SQLite store, and the clock runs from ``Engine.start`` to its return: loading and
validating the graph is timed apart (``prepare``), and process start-up is left out (see
``engine.py`` for end-to-end numbers). Best of ``--repeat``.

A listener on the event stream counts how many items were running at once, so the run shows
that the width was really used (and never exceeded), and every item must succeed.

Run: .venv/bin/python benchmarks/map_parallel.py [--repeat 3] [--items 200] [--width 16]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rein.engine.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore
from rein.workers.scripted import ScriptedWorker

DELAY = 0.05


def mapped(items: int, width: int) -> dict:
    """A graph with one map node over ``items`` numbers; the body is one task ``w``."""
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "bench/map",
            "title": "map parallelism", "objective": "measure parallel items",
            "requires_conformance": 3,
            "constraints": {"max_parallel_nodes": width},
            "params": {"xs": {"type": "array", "description": "the items",
                              "default": list(range(items))}},
            "entrypoints": ["fan"],
            "nodes": {"fan": {"type": "map", "title": "fan out", "description": "one per item",
                              "map": {"over": "params.xs", "as": "x", "max_items": items,
                                      "max_parallel": width,
                                      "body": {"title": "item", "entrypoints": ["w"], "nodes": {
                                          "w": {"title": "work", "description": "50 ms"}}}}}}}


class Concurrency:
    """Counts body tasks between ``node/started`` and their terminal event."""

    TERMINAL = frozenset({"node/finished", "node/skipped", "node/cancelled"})

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.succeeded = 0

    def __call__(self, event: Any) -> None:
        node = str(event.payload.get("node", ""))
        if not node.endswith("].w"):
            return
        if event.type == "node/started":
            self.now += 1
            self.peak = max(self.peak, self.now)
        elif event.type in self.TERMINAL:
            self.now -= 1
            self.succeeded += event.payload.get("status") == "succeeded"


@dataclass(frozen=True, kw_only=True, slots=True)
class Sample:
    """One measured run."""

    run: float
    prepare: float
    peak: int
    succeeded: int


def once(graph: dict) -> Sample:
    with tempfile.TemporaryDirectory(prefix="rein-map-") as tmp:
        ws = Path(tmp)
        path = ws / "map.agraph.yaml"
        path.write_text(yaml.safe_dump(graph, sort_keys=False))
        worker = ScriptedWorker({"nodes": {"w": [{"outputs": {}, "delay_seconds": DELAY}]}})
        store = SQLiteStore.open(ws)
        counter = Concurrency()
        engine = Engine(workspace=ws, store=store, workers=(worker,), listeners=[counter],
                        env={})
        t0 = time.perf_counter()
        prepared = prepare(path, given={}, env={})
        t1 = time.perf_counter()
        outcome = engine.start(prepared, approved=prepared.digest)
        t2 = time.perf_counter()
        store.close()
    if outcome.status.value != "succeeded":
        raise SystemExit(f"the map run ended {outcome.status.value}")
    return Sample(run=t2 - t1, prepare=t1 - t0, peak=counter.peak, succeeded=counter.succeeded)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs (best kept)")
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--width", type=int, default=16)
    args = parser.parse_args(argv)

    graph = mapped(args.items, args.width)
    samples = [once(graph) for _ in range(args.repeat)]
    best = min(samples, key=lambda s: s.run)
    for s in samples:
        if s.succeeded != args.items or s.peak > args.width:
            raise SystemExit(f"{s.succeeded}/{args.items} items succeeded, peak {s.peak} "
                             f"running at once (width {args.width})")
    ideal = args.items / args.width * DELAY
    floor = -(-args.items // args.width) * DELAY
    ratio = best.run / ideal
    print(f"map {args.items} items x {DELAY * 1000:.0f} ms, width {args.width}")
    print(f"measured  {best.run:.3f} s  (best of {args.repeat}; all: "
          f"{', '.join(f'{s.run:.3f}' for s in samples)})")
    print(f"ideal     {ideal:.3f} s  (waves of {args.width}: floor {floor:.3f} s)")
    print(f"ratio     {ratio:.2f}  -> target <= 1.20 {'met' if ratio <= 1.2 else 'MISSED'}")
    print(f"peak      {best.peak} items running at once")
    print(f"prepare   {best.prepare:.3f} s  (load, validate, plan; not in 'measured')")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
