"""Engine work per node as CPU instructions (valgrind's callgrind): repeatable on a busy machine.

Wall-clock figures move with whatever else the machine runs; instruction counts barely do.
This runs the layered graph of ``engine.py`` (or, with ``--graph map``, the map of
``map_parallel.py`` with instant items) in process (scripted worker, SQLite store in a
temporary workspace) under ``valgrind --tool=callgrind`` at two sizes and prints the
instructions of one more node: (count at the larger size - count at the smaller) / (the
difference in nodes), so interpreter start-up and imports cancel out. ``--src DIR`` runs the
``src`` of another checkout instead (say, an older commit unpacked with ``git archive``), to
print the two side by side from one invocation.

Run: .venv/bin/python benchmarks/engine_instructions.py [--sizes 20,120] [--src OLD/src]
     [--graph layered|map]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The child: one in-process run of the layered graph of ``n`` nodes, checked.
CHILD = """
import asyncio, sys, tempfile, yaml
from pathlib import Path
sys.path.insert(0, {here!r})
from engine import layered
from map_parallel import mapped
from rein.engine.run.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore
from rein.workers.scripted import ScriptedWorker
graph = layered({n}) if {graph!r} == "layered" else mapped({n}, 16)
with tempfile.TemporaryDirectory() as tmp:
    ws = Path(tmp)
    path = ws / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    worker = ScriptedWorker({{"nodes": {{k: [{{"outputs": {{}}}}] for k in [*graph["nodes"], "w"]}}}})
    store = SQLiteStore.open(ws)
    seen = []
    store._db.set_trace_callback(seen.append)
    engine = Engine(workspace=ws, store=store, workers=(worker,), env={{}})
    prepared = prepare(path, given={{}}, env={{}})
    out = asyncio.run(engine.start(prepared, approved=prepared.digest))
    done = sum(1 for r in store.nodes(out.run_id) if r.status.value == "succeeded"
               and r.type == "task")
    store.close()
    assert out.status.value == "succeeded" and done == {n}, (out.status, done)
    print("statements", len(seen), "commits", sum(q == "COMMIT" for q in seen))
"""


def instructions(n: int, src: str | None, graph: str) -> tuple[int, int, int]:
    """Instructions callgrind counted for one checked run of ``n`` nodes, and the SQL
    statements and commits of the run (SQLite's trace callback)."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             sys.executable, "-c", CHILD.format(here=str(HERE), n=n, graph=graph)],
            env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"the {n}-node run failed:\n{proc.stderr[-3000:]}")
        found = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
        if not found:
            raise SystemExit(f"no instruction count from valgrind:\n{proc.stderr[-2000:]}")
        sql = re.search(r"statements (\d+) commits (\d+)", proc.stdout)
        if not sql:
            raise SystemExit(f"no statement count from the run:\n{proc.stdout[-2000:]}")
        return int(found.group(1)), int(sql.group(1)), int(sql.group(2))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20,120", help="two graph sizes")
    parser.add_argument("--src", help="also measure this src folder (another checkout)")
    parser.add_argument("--graph", choices=("layered", "map"), default="layered",
                        help="layered tasks (engine.py's), or one map of instant items "
                             "(map_parallel.py's, width 16): then N is the items")
    args = parser.parse_args(argv)
    small, large = (int(s) for s in args.sizes.split(","))
    rows = [("this checkout", None)] + ([(args.src, args.src)] if args.src else [])
    print(f"{'engine':<32}{'instr @' + str(small):>16}{'instr @' + str(large):>16}"
          f"{'instr/node':>13}{'SQL/node':>10}{'commits/node':>14}")
    added = large - small
    for name, src in rows:
        (a, sa, ca), (b, sb, cb) = instructions(small, src, args.graph), instructions(large, src, args.graph)
        print(f"{name:<32}{a:>16,}{b:>16,}{(b - a) / added:>13,.0f}"
              f"{(sb - sa) / added:>10.1f}{(cb - ca) / added:>14.1f}")
    print("\nper node = (count at the larger size - at the smaller) / (nodes added); "
          "instructions are user-space only (the kernel's side of a commit is not in them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
