"""What the store costs per node, beside the floor: one raw SQLite commit per node.

The graph needs no worker: ``n`` expression decisions in layers of 10, each depending on
every node of the layer before (``engine.py``'s shape), so all a node does besides deciding
is recording itself. It runs in process, in a child interpreter, with rein's SQLite store in
a fresh temporary workspace. The store's CPU time is the time spent inside its write path
(``transition``, ``flush`` and the commits that end a batch: each counted once, at the
outermost call), from ``time.process_time``.

The floor, measured in the same child right after: with Python's ``sqlite3`` on a database
set up as rein's is (WAL, ``synchronous=NORMAL``), one transaction per node holding one
``INSERT`` of an event-sized row: ``BEGIN IMMEDIATE``, ``INSERT``, ``COMMIT``. Whatever a
store does, a node recorded durably on its own costs at least that.

Printed per size: min / median / max over ``--repeat`` runs of the store's CPU per node and
of the floor's, their ratio (medians), and the statements and commits per node the run
made. Goal (the performance issue): the store within 2x the floor.

Run: .venv/bin/python benchmarks/store_cost.py [--sizes 1000,5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

GOAL = 2.0

CHILD = r"""
import asyncio, json, sqlite3, sys, tempfile, time
from pathlib import Path
import yaml
from rein.engine.run.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore

n = int(sys.argv[1])
nodes = {}
for i in range(n):
    layer = i // 10
    node = {"type": "decision", "title": f"n{i}", "description": "decide",
            "decision": {"evaluator": "expression", "default_branch": "odd", "branches": [
                {"label": "even", "description": "even", "when": f"{i} % 2 == 0"},
                {"label": "odd", "description": "odd", "when": f"{i} % 2 == 1"}]}}
    if layer:
        node["depends_on"] = [f"n{j}" for j in range((layer - 1) * 10, layer * 10)]
    nodes[f"n{i}"] = node
graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "bench/store", "title": "t",
         "objective": "o", "requires_conformance": 3,
         "entrypoints": [f"n{i}" for i in range(min(10, n))], "nodes": nodes}

spent = [0.0]
depth = [0]

def timed(method):
    def wrapper(self, *args, **kwargs):
        if depth[0]:
            return method(self, *args, **kwargs)
        depth[0] += 1
        start = time.process_time()
        try:
            return method(self, *args, **kwargs)
        finally:
            spent[0] += time.process_time() - start
            depth[0] -= 1
    return wrapper

for name in ("transition", "flush", "_close"):
    setattr(SQLiteStore, name, timed(getattr(SQLiteStore, name)))

with tempfile.TemporaryDirectory() as tmp:
    ws = Path(tmp)
    path = ws / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    store = SQLiteStore.open(ws)
    seen = []
    store._db.set_trace_callback(seen.append)
    engine = Engine(workspace=ws, store=store, workers=(), env={})
    prepared = prepare(path, given={}, env={})
    start = time.process_time()
    out = asyncio.run(engine.start(prepared, approved=prepared.digest))
    run_cpu = time.process_time() - start
    done = sum(1 for r in store.nodes(out.run_id) if r.status.value == "succeeded")
    store.close()
    assert out.status.value == "succeeded" and done == n, (out.status, done)
    work = [q for q in seen if not q.startswith("PRAGMA")]

    db = sqlite3.connect(str(ws / "floor.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE events (run_id TEXT, seq INTEGER, type TEXT, payload TEXT,"
               " at TEXT, PRIMARY KEY (run_id, seq))")
    payload = json.dumps({"node": "n1234", "type": "decision", "title": "n1234"})
    start = time.process_time()
    for seq in range(n):
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?)",
                   ("run-1", seq, "node/finished", payload, "2026-01-01T00:00:00.000000Z"))
        db.execute("COMMIT")
    floor = time.process_time() - start
    db.close()
print(json.dumps({"store": spent[0], "run": run_cpu, "floor": floor,
                  "statements": len(work), "commits": sum(q == "COMMIT" for q in work)}))
"""


def once(n: int) -> dict[str, float]:
    env = {**os.environ}
    out = subprocess.run([sys.executable, "-c", CHILD, str(n)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def spread(values: list[float], n: int) -> str:
    per = sorted(1000 * v / n for v in values)
    return f"{per[0]:7.3f} {statistics.median(per):7.3f} {per[-1]:7.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000", help="graph sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = []
    for n in [int(s) for s in args.sizes.split(",") if s.strip()]:
        samples = []
        for i in range(args.repeat):
            print(f"{n} nodes, run {i + 1}/{args.repeat} ...", file=sys.stderr)
            samples.append(once(n))
        rows.append((n, samples))
    print(f"store cost per node of a no-worker graph, n={args.repeat}, load average {load:.1f} "
          f"-> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; CPU ms per node, "
          "min median max")
    print(f"{'nodes':>6}  {'store':^23}  {'floor: raw SQLite':^23}  {'ratio':>6}  "
          f"{'run':^23}  stmts/node  commits/node")
    verdicts = []
    for n, samples in rows:
        store = statistics.median(s["store"] for s in samples)
        floor = statistics.median(s["floor"] for s in samples)
        print(f"{n:>6}  {spread([s['store'] for s in samples], n)}  "
              f"{spread([s['floor'] for s in samples], n)}  {store / floor:6.2f}  "
              f"{spread([s['run'] for s in samples], n)}  "
              f"{samples[0]['statements'] / n:10.2f}  {samples[0]['commits'] / n:12.2f}")
        verdicts.append((n, store / floor))
    print("\nstore = CPU inside the store's write path; floor = BEGIN IMMEDIATE, one INSERT, "
          "COMMIT per node on a WAL database (synchronous=NORMAL); run = the whole run's CPU")
    for n, ratio in verdicts:
        print(f"goal: the store within {GOAL}x the floor at {n} nodes: {ratio:.2f}x -> "
              f"{'met' if ratio <= GOAL else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
