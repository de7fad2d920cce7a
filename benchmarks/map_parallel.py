"""Map parallelism: 200 and 1,000 items, 50 ms of work each, 16 at a time.

One map node whose body is a single task, ``max_parallel: 16`` and
``constraints.max_parallel_nodes: 16``, served by the scripted worker with
``delay_seconds: 0.05`` (an asyncio sleep, so the 50 ms are waiting, as a model call is).
The floor (the ideal the ratio divides by) is the time of whole rounds: 16 items at once,
each taking 50 ms, so 200 items need ceil(200 / 16) = 13 rounds, 0.650 s (not 200 / 16 x
50 ms = 0.625 s: no schedule runs the last 8 items in less than a full 50 ms). The engine runs in this process, in a fresh temporary workspace with its
own SQLite store, and the clock runs from ``Engine.start`` to its return: loading and
validating the graph is timed apart (``prepare``), and process start-up is left out (see
``engine.py`` for end-to-end numbers). Each size runs ``--repeat`` times; the ratio to the
floor is printed for the fastest, the median and the slowest run.

A listener on the event stream counts how many items were running at once, so the run shows
that the width was really used (and never exceeded), and every item must succeed.

Run: .venv/bin/python benchmarks/map_parallel.py [--repeat 5] [--items 200,1000] [--width 16]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rein.engine.run.runner import Engine, prepare
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
    cpu: float  # CPU seconds of this process during the run: the engine's own work
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
        t1, c1 = time.perf_counter(), time.process_time()
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
        t2, c2 = time.perf_counter(), time.process_time()
        store.close()
    if outcome.status.value != "succeeded":
        raise SystemExit(f"the map run ended {outcome.status.value}")
    return Sample(run=t2 - t1, cpu=c2 - c1, prepare=t1 - t0, peak=counter.peak, succeeded=counter.succeeded)


def measure(items: int, width: int, repeat: int) -> tuple[list[Sample], float]:
    """``repeat`` checked runs of one size, and its floor."""
    graph = mapped(items, width)
    samples = [once(graph) for _ in range(repeat)]
    for s in samples:
        if s.succeeded != items or s.peak > width:
            raise SystemExit(f"{s.succeeded}/{items} items succeeded, peak {s.peak} "
                             f"running at once (width {width})")
    return samples, floor(items, width)


def floor(items: int, width: int, delay: float = DELAY) -> float:
    """The least time ``items`` equal items of ``delay`` seconds take ``width`` at a time:
    whole rounds, the last one as long as the others however few it runs."""
    return -(-items // width) * delay


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per size")
    parser.add_argument("--items", default="200,1000", help="map sizes, comma-separated")
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--target", type=float, default=1.1, help="the ratio to meet")
    args = parser.parse_args(argv)

    print(f"map of N items x {DELAY * 1000:.0f} ms, width {args.width}, {args.repeat} runs "
          "each; seconds from Engine.start to its return")
    print(f"{'items':>6}{'floor':>8}{'rounds':>7}{'min':>8}{'median':>8}{'max':>8}"
          f"{'ratio min/med/max':>20}{'peak':>6}{'cpu ms/item':>12}{'prepare':>9}")
    verdicts = []
    for items in [int(n) for n in args.items.split(",") if n.strip()]:
        samples, ideal = measure(items, args.width, args.repeat)
        runs = sorted(s.run for s in samples)
        low, mid, high = runs[0], statistics.median(runs), runs[-1]
        ratios = "/".join(f"{t / ideal:.2f}" for t in (low, mid, high))
        print(f"{items:>6}{ideal:>8.3f}{-(-items // args.width):>7}{low:>8.3f}{mid:>8.3f}"
              f"{high:>8.3f}"
              f"{ratios:>20}{max(s.peak for s in samples):>6}"
              f"{1000 * statistics.median(s.cpu for s in samples) / items:>12.2f}"
              f"{statistics.median(s.prepare for s in samples):>9.3f}")
        verdicts.append((items, mid / ideal))
    print("\nfloor = rounds x 50 ms, rounds = ceil(items / width); ratio = measured / floor; peak = most items "
          "running at once; cpu ms/item = median CPU time of the run / items; prepare (load, "
          "validate, plan) is not in the times")
    for items, ratio in verdicts:
        print(f"target: {items} items within {args.target}x the floor (median): {ratio:.2f}x "
              f"-> {'met' if ratio <= args.target else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
