"""Memory of a run during a large map: what each more item adds to the peak.

One map node over ``n`` numbers whose body is one expression decision (no worker: the
items end as fast as the engine takes them), 16 at a time, collecting each item's decision.
The run is in process in a child interpreter started through the reaper of ``child.py``,
so the peak resident size printed is the child's own. Printed per size (min / median / max
over ``--repeat``): the peak, and its CPU; then what one more item adds to the peak between
the two sizes. ``--before SRC`` runs the same with another rein source tree (an older
checkout's ``src``), the reference in the same invocation.

Goal (the performance issue): a run's memory bounded by what is in flight, not growing
with the items that ended (it grew about 7 KB per item).

Run: .venv/bin/python benchmarks/map_memory.py [--sizes 1000,10000] [--repeat 3] [--before SRC]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child import Measured, measure  # the reaper beside this script

CHILD = r"""
import asyncio, sys, tempfile
from pathlib import Path
import yaml
from rein.engine.run.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore

n = int(sys.argv[1])
decide = {"type": "decision", "title": "parity", "description": "even or odd",
          "decision": {"evaluator": "expression", "default_branch": "odd", "branches": [
              {"label": "even", "description": "even", "when": "x % 2 == 0"},
              {"label": "odd", "description": "odd", "when": "x % 2 == 1"}]}}
graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "bench/map-memory",
         "title": "a map", "objective": "memory", "requires_conformance": 3,
         "constraints": {"max_parallel_nodes": 16, "max_node_executions": 2 * n + 10},
         "params": {"xs": {"type": "array", "description": "items",
                           "default": list(range(n))}},
         "entrypoints": ["fan"],
         "nodes": {"fan": {"type": "map", "title": "fan", "description": "one per item",
                           "map": {"over": "params.xs", "as": "x", "max_items": n,
                                   "max_parallel": 16,
                                   "collect": {"parity": "nodes.d.outputs.decision"},
                                   "body": {"title": "item", "entrypoints": ["d"],
                                            "nodes": {"d": decide}}}}}}
with tempfile.TemporaryDirectory() as tmp:
    ws = Path(tmp)
    path = ws / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    store = SQLiteStore.open(ws)
    engine = Engine(workspace=ws, store=store, workers=(), env={})
    prepared = prepare(path, given={}, env={})
    out = asyncio.run(engine.start(prepared, approved=prepared.digest))
    store.close()
    assert out.status.value == "succeeded", out.status
print("succeeded")
"""


def once(n: int, src: str | None) -> Measured:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    if src:
        env["PYTHONPATH"] = src
    with tempfile.TemporaryDirectory(prefix="rein-bench-map-") as tmp:
        env["HOME"] = tmp
        got = measure([sys.executable, "-c", CHILD, str(n)], cwd=Path(tmp), env=env)
    if got.code != 0 or "succeeded" not in got.stdout:
        raise SystemExit(f"the map run failed (exit {got.code}): {got.stderr[-2000:]}")
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="two map sizes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row")
    parser.add_argument("--before", metavar="SRC", help="another rein source tree, beside")
    args = parser.parse_args()
    small, large = (int(s) for s in args.sizes.split(","))
    forms = {"rein": None, **({"before": args.before} if args.before else {})}
    load = os.getloadavg()[0]
    got: dict[tuple[str, int], list[Measured]] = {}
    for _ in range(args.repeat):  # interleaved: a change of load hits every row
        for n in (small, large):
            for label, src in forms.items():
                print(f"{label}, {n} items ...", file=sys.stderr)
                got.setdefault((label, n), []).append(once(n, src))
    print(f"a map of N instant items, 16 at a time, n={args.repeat}, load average {load:.1f} "
          f"-> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; min median max")
    print(f"{'':<8}{'items':>7}  {'peak MB':^20}  {'cpu s':^20}")
    for (label, n), samples in got.items():
        peaks = sorted(s.peak_mb for s in samples)
        cpus = sorted(s.cpu for s in samples)
        print(f"{label:<8}{n:>7}  {peaks[0]:6.1f} {statistics.median(peaks):6.1f} "
              f"{peaks[-1]:6.1f}  {cpus[0]:6.2f} {statistics.median(cpus):6.2f} "
              f"{cpus[-1]:6.2f}")
    for label in forms:
        grew = (statistics.median(s.peak_mb for s in got[(label, large)])
                - statistics.median(s.peak_mb for s in got[(label, small)]))
        print(f"{label}: {1024 * grew / (large - small):.2f} KB of peak memory per more item "
              f"(medians, {small} -> {large} items)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
