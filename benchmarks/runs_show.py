"""`rein runs show` of a large run: time and memory, beside the same command on a small run.

A finished run of ``n`` task nodes is written straight into a fresh workspace's store (each
node with one attempt, its usage and two passed criteria, as a checked run records them;
the first three failed), then ``rein runs show RUN`` runs as a subprocess, through the
reaper of ``child.py`` (its own wall time, CPU time and peak memory). The reference, in the
same invocation: the same command on a run of 500 nodes, so that what grows with the run is
what the two rows differ by.

``--before SRC`` adds the same commands run by another rein source tree (an older
checkout's ``src``), each on a store that tree wrote itself (a store of an older schema is
refused by nothing, but a newer one is refused by the older rein), and one more row,
``upgrade``: this rein's first command on a copy of that older store, which upgrades it
(filling the columns a newer schema adds) before it shows the run. Every row's output must
be the same, byte for byte, or the benchmark stops.

Goal (the performance issue): at most 0.3 s of CPU for 50,000 nodes, memory independent
of the run's size.

Run: .venv/bin/python benchmarks/runs_show.py [--sizes 500,50000] [--repeat 3] [--before SRC]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child import Measured, measure  # the reaper beside this script

from rein.core.ids import NodeKey, RunId
from rein.core.states import NodeStatus, RunStatus
from rein.store.base import NodeRow, RunRow, Transition
from rein.store.sqlite import SQLiteStore

T = "2026-01-01T00:00:00Z"
GOAL_SECONDS = 0.3


def stored_run(workspace: Path, n: int) -> str:
    """A finished run of ``n`` checked task nodes written into ``workspace``'s store."""
    store = SQLiteStore.open(workspace)
    assert store is not None
    run_id = RunId(f"run-bench-{n}")
    store.create_run(RunRow(run_id=run_id, graph_id="bench/runs-show",
                            graph_path="g.agraph.yaml", graph_digest="sha256-x=",
                            status=RunStatus.RUNNING, started_at=T),
                     event_type="run/started", payload={})
    with store.batch():
        for i in range(n):
            status = NodeStatus.FAILED if i < 3 else NodeStatus.SUCCEEDED
            record = {"node_id": f"n{i}", "status": status.value, "started_at": T,
                      "finished_at": T, "outputs": {"result": "a note long enough to pass"},
                      "attempts": [{
                          "attempt": 1, "status": status.value, "started_at": T,
                          "finished_at": T, "outputs": {"result": "a note"},
                          "usage": {"input_tokens": 120, "output_tokens": 40,
                                    "total_tokens": 160, "cost_usd": 0.0004},
                          "success": {"passed": status is NodeStatus.SUCCEEDED, "results": [
                              {"id": "present", "kind": "artifact_present", "passed": True,
                               "evidence": "outputs.result is present"},
                              {"id": "long", "kind": "expression", "passed": True,
                               "evidence": "len(self.outputs.result) > 10"}]}}]}
            store.transition(run_id, "node/finished", {"node": f"n{i}"}, T, Transition(
                node=NodeRow(run_id=run_id, node_key=NodeKey(f"n{i}"), node_id=f"n{i}",
                             scope_path="", type="task", status=status, record=record)))
    store.transition(run_id, "run/finished", {"status": "failed"}, T,
                     Transition(run_status=RunStatus.FAILED, finished_at=T, summary={}))
    store.close()
    return str(run_id)


def rein_command() -> list[str]:
    script = Path(sys.executable).with_name("rein")
    return [str(script)] if script.exists() else [
        sys.executable, "-c", "from rein.cli import run; run()"]


def _env(workspace: Path, src: str | None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workspace / "home"),
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    if src:
        env["PYTHONPATH"] = src
    return env


def write_with(src: str | None, workspace: Path, n: int) -> str:
    """:func:`stored_run` by the rein of ``src`` (this one when None), in a process of its
    own: the store is the one that rein writes."""
    (workspace / "home").mkdir(parents=True)
    done = subprocess.run([sys.executable, __file__, "--write", str(workspace), str(n)],
                          env=_env(workspace, src), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"writing the run failed: {done.stderr[-2000:]}")
    return done.stdout.strip()


def show(workspace: Path, run_id: str, src: str | None) -> Measured:
    got = measure([*rein_command(), "runs", "show", run_id], cwd=workspace,
                  env=_env(workspace, src))
    if got.code != 0 or run_id not in got.stdout or "usage" not in got.stdout:
        raise SystemExit(f"rein runs show failed (exit {got.code}): {got.stderr[-2000:]}")
    return got


def upgrade(old: Path, into: Path, run_id: str) -> Measured:
    """This rein's first `runs show` on a copy of a store an older rein wrote."""
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(old, into)
    return show(into, run_id, None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500,50000", help="run sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="commands per row")
    parser.add_argument("--before", metavar="SRC", help="another rein source tree, beside")
    parser.add_argument("--write", nargs=2, metavar=("WORKSPACE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:  # the writer of write_with, in the rein it was started with
        print(stored_run(Path(args.write[0]), int(args.write[1])))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    load = os.getloadavg()[0]
    rows: list[tuple[str, int, list[Measured], int]] = []
    with tempfile.TemporaryDirectory(prefix="rein-bench-show-") as tmp:
        for n in sizes:
            forms = {"rein": None, **({"before": args.before} if args.before else {})}
            where = {label: Path(tmp) / str(n) / label for label in forms}
            print(f"writing a run of {n} nodes ({', '.join(forms)}) ...", file=sys.stderr)
            run_ids = {label: write_with(src, where[label], n) for label, src in forms.items()}
            got: dict[str, list[Measured]] = {label: [] for label in forms}
            if args.before:
                got["upgrade"] = []
            for _ in range(args.repeat):  # interleaved: a change of load hits every row
                for label, src in forms.items():
                    got[label].append(show(where[label], run_ids[label], src))
                if args.before:
                    got["upgrade"].append(upgrade(where["before"], Path(tmp) / str(n) / "up",
                                                  run_ids["before"]))
            outputs = {s.stdout for samples in got.values() for s in samples}
            if len(outputs) != 1:
                raise SystemExit(f"the outputs at {n} nodes differ:\n" + "\n--\n".join(outputs))
            for label, samples in got.items():
                rows.append((label, n, samples, len(samples[0].stdout.splitlines())))
    print(f"rein runs show RUN, n={args.repeat}, load average {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; min median max"
          + ("; every row printed the same output" if args.before else ""))
    print(f"{'':<8}{'nodes':>7}  {'wall s':^20}  {'cpu s':^20}  {'peak MB':>7}  lines")
    for label, n, samples, lines in rows:
        walls = sorted(s.wall for s in samples)
        cpus = sorted(s.cpu for s in samples)
        print(f"{label:<8}{n:>7}  {walls[0]:6.3f} {statistics.median(walls):6.3f} "
              f"{walls[-1]:6.3f}  {cpus[0]:6.3f} {statistics.median(cpus):6.3f} "
              f"{cpus[-1]:6.3f}  {max(s.peak_mb for s in samples):7.0f}  {lines:5}")
    cpu_of = {(label, n): statistics.median(s.cpu for s in samples)
              for label, n, samples, _ in rows}
    mine = {n: samples for label, n, samples, _ in rows if label == "rein"}
    for n in mine:
        if ("before", n) in cpu_of:
            print(f"before -> after at {n} nodes: {cpu_of['before', n]:.3f} -> "
                  f"{cpu_of['rein', n]:.3f} s CPU (median), "
                  f"{cpu_of['before', n] / cpu_of['rein', n]:.1f}x")
    if len(mine) > 1:
        small, large = mine[min(mine)], mine[max(mine)]
        cpu = statistics.median(s.cpu for s in large)
        grew = max(s.peak_mb for s in large) - max(s.peak_mb for s in small)
        print(f"goal: at most {GOAL_SECONDS} s of CPU at {max(mine)} nodes: {cpu:.3f} -> "
              f"{'met' if cpu <= GOAL_SECONDS else 'NOT MET'}; peak memory at {max(mine)} "
              f"nodes minus at {min(mine)}: {grew:+.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
