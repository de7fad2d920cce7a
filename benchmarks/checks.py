"""A run of a graph with a check per node, beside the same graph without its checks.

The graph is the generated layered task graph of ``validate.py`` (50 tasks per layer; each
node reads one or two nodes of the layer above through its inputs and is checked by an
``artifact_present`` and an ``expression`` criterion), served by the scripted worker with no
delay. Each run is ``rein run GRAPH --approve DIGEST --json`` in a subprocess, in a fresh
temporary workspace, its event stream read to check that the run succeeded with every node
succeeded before anything is printed. Printed per size, ``--repeat`` runs each, interleaved
(min / median / max): wall time and the child's own CPU time (user + system, from wait4:
the figure that holds on a shared machine), per node, and its own peak resident memory
(through the reaper of ``child.py``, so this script's size is not counted).

* ``checked``: the graph as generated;
* ``unchecked`` (the reference, same run): the same graph with every ``success`` block
  removed, so the difference is what the checks cost;
* ``--before SRC``: the checked graph run by another rein source tree (such as an older
  checkout's ``src``), so before and after come from one run. An older tree whose checks
  cost grows with the square of the nodes takes minutes at 10,000 nodes.

``--no-unchecked`` leaves the reference out (at 100,000 nodes each run takes minutes).
``--profile DIR`` runs the checked graph once more per size under cProfile (not measured:
the profiler costs CPU) and writes ``DIR/checks-<nodes>.prof`` and the top of it, by own
time and by cumulative time, to ``DIR/checks-<nodes>.txt``. The load average is printed
before and after each size: the machine is shared, and CPU time grows with its load.

100,000 generated nodes are some 75 MB of YAML: each run's workspace raises the loader's
``[limits] max_bytes`` in the user's ``rein.toml`` to twice the file's size.

Goal (the performance issue): linear, at most 1.5 ms of CPU per node at 10,000 and at
100,000 nodes.

    .venv/bin/python benchmarks/checks.py                        # 1,000 and 10,000 nodes
    .venv/bin/python benchmarks/checks.py --sizes 1000 --repeat 5 --before OLD/src
    .venv/bin/python benchmarks/checks.py --sizes 100000 --repeat 1 --no-unchecked \
        --before OLD/src --profile /tmp/prof
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child import measure  # the reaper beside this script
from validate import generate  # the generator beside this script

WIDTH = 50
GOAL_CPU_MS = 1.5


@dataclass(frozen=True, kw_only=True, slots=True)
class Sample:
    wall: float  # seconds
    cpu: float  # seconds, the child's user + system
    peak_mb: float


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    label: str
    nodes: int
    samples: tuple[Sample, ...]

    def spread(self, values: list[float]) -> str:
        per = [1000 * v / self.nodes for v in values]
        return f"{min(per):7.3f} {statistics.median(per):7.3f} {max(per):7.3f}"

    @property
    def cpu_ms(self) -> float:
        return 1000 * statistics.median(s.cpu for s in self.samples) / self.nodes


def unchecked(text: str) -> str:
    """The generated graph without its ``success`` blocks (the criteria under them)."""
    return re.sub(r"    success:\n      criteria:\n(?:        .*\n)+", "", text)


def rein_command() -> list[str]:
    script = Path(sys.executable).with_name("rein")
    return [str(script)] if script.exists() else [
        sys.executable, "-c", "from rein.cli import run; run()"]


def child_env(home: Path, cache: Path, src: str | None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONPYCACHEPREFIX": str(cache)}
    if src:
        env["PYTHONPATH"] = src
    return env


PROFILED = """
import cProfile, sys
from rein.cli import run
sys.argv = ["rein", *sys.argv[2:]]
profile = cProfile.Profile()
try:
    profile.runcall(run)
except SystemExit:
    pass
finally:
    profile.dump_stats(OUT)
"""


def run_once(text: str, *, cache: Path, src: str | None, profile: Path | None = None
             ) -> Sample:
    # The generated nodes are the lines "  <id>:" (parsing 100,000 nodes' YAML here would
    # take minutes of this script's own time).
    ids = re.findall(r"^  (n\d+):$", text, re.MULTILINE)
    n = len(ids)
    answers = {"nodes": {nid: [{"outputs": {"result": "a note long enough to pass"}}]
                         for nid in ids}}
    with tempfile.TemporaryDirectory(prefix="rein-bench-checks-") as tmp:
        ws = Path(tmp)
        home = ws / "home"
        user = home / ".config" / "rein" / "rein.toml"
        user.parent.mkdir(parents=True)
        # 100,000 generated nodes are some 75 MB of YAML: over the loader's default limit.
        user.write_text(f'[workers.scripted]\nanswers = "{ws / "answers.yaml"}"\n'
                        f'[limits]\nmax_bytes = {max(32 * 2**20, 2 * len(text))}\n')
        (ws / "answers.yaml").write_text(json.dumps(answers))  # JSON is YAML: quick to load
        (ws / "g.agraph.yaml").write_text(text)
        env = child_env(home, cache, src)
        digest = subprocess.run([*rein_command(), "graph", "digest", "g.agraph.yaml"],
                                cwd=ws, env=env, capture_output=True, text=True, check=True
                                ).stdout.strip()
        # Through the reaper: this process holds the generated graph, and wait4 on a
        # child of ours would report our size as its peak.
        args = ["run", "g.agraph.yaml", "--approve", digest, "--json"]
        command = [*rein_command(), *args] if profile is None else [
            sys.executable, "-c", PROFILED.replace("OUT", repr(str(profile))), "-", *args]
        got = measure(command, cwd=ws, env=env)
        check(n, got.code, got.stdout, got.stderr)
    return Sample(wall=got.wall, cpu=got.cpu, peak_mb=got.peak_mb)


def check(n: int, code: int, out: str, err: str) -> None:
    """The run succeeded with every node succeeded, its checks evaluated, or stop."""
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    summary = lines[-1] if lines else {}
    done = sum(1 for e in lines if e.get("type") == "node/finished"
               and e["payload"].get("status") == "succeeded")
    if code != 0 or summary.get("status") != "succeeded" or done != n:
        raise SystemExit(f"rein run did not succeed (exit {code}, {done}/{n} nodes "
                         f"succeeded): {summary}\n{err[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="graph sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row")
    parser.add_argument("--before", metavar="SRC", help="another rein source tree, beside")
    parser.add_argument("--no-unchecked", action="store_true",
                        help="leave out the reference run without checks")
    parser.add_argument("--profile", metavar="DIR", type=Path,
                        help="profile one more checked run per size into DIR")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="rein-bench-pycache-") as cache_dir:
        cache = Path(cache_dir)
        for src in (None, args.before):  # bytecode compiled once, as an installed rein runs
            subprocess.run([*rein_command(), "--help"], env=child_env(cache, cache, src),
                           capture_output=True, check=True)
        load = os.getloadavg()[0]
        rows: list[Row] = []
        loads: list[str] = []
        for n in sizes:
            text = generate(n, WIDTH)
            forms = {"checked": (text, None)}
            if not args.no_unchecked:
                forms["unchecked"] = (unchecked(text), None)
            if args.before:
                forms["before: checked"] = (text, args.before)
            samples: dict[str, list[Sample]] = {label: [] for label in forms}
            before = os.getloadavg()
            for i in range(args.repeat):  # interleaved: a change of load hits every row
                for label, (graph, src) in forms.items():
                    print(f"{n} nodes, {label}, run {i + 1}/{args.repeat} ...", file=sys.stderr)
                    samples[label].append(run_once(graph, cache=cache, src=src))
            rows += [Row(label=label, nodes=n, samples=tuple(s)) for label, s in samples.items()]
            loads.append(f"{n} nodes: load average {_loads(before)} before, "
                         f"{_loads(os.getloadavg())} after")
            if args.profile is not None:
                print(f"{n} nodes, checked, profiled ...", file=sys.stderr)
                profiled(text, n, args.profile, cache=cache)
    print(f"a run with a check per node, n={args.repeat}, load average {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; ms per node, min median max")
    print(f"{'':<17}{'nodes':>7}  {'wall ms/node':^23}  {'cpu ms/node':^23}  peak MB")
    for row in rows:
        print(f"{row.label:<17}{row.nodes:>7}  {row.spread([s.wall for s in row.samples])}"
              f"  {row.spread([s.cpu for s in row.samples])}"
              f"  {max(s.peak_mb for s in row.samples):7.0f}")
    for line in loads:
        print(line)
    checked = {r.nodes: r for r in rows if r.label == "checked"}
    reference = {r.nodes: r for r in rows if r.label == "unchecked"}
    for n, row in checked.items():
        added = (f"the checks add {row.cpu_ms - reference[n].cpu_ms:.3f} ms of CPU per node; "
                 if n in reference else "")
        print(f"{n} nodes: {added}goal <= {GOAL_CPU_MS} ms/node CPU: {row.cpu_ms:.3f} -> "
              f"{'met' if row.cpu_ms <= GOAL_CPU_MS else 'NOT MET'}")
    if len(checked) > 1:
        small, large = checked[min(checked)], checked[max(checked)]
        print(f"linear: CPU per node at {large.nodes} / at {small.nodes} = "
              f"{large.cpu_ms / small.cpu_ms:.2f} (1.00 is linear)")
    return 0


def _loads(values: tuple[float, float, float]) -> str:
    return " ".join(f"{v:.1f}" for v in values)


def profiled(text: str, n: int, folder: Path, *, cache: Path) -> None:
    """One more checked run under cProfile: its stats and the top of them into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder.resolve() / f"checks-{n}.prof"
    run_once(text, cache=cache, src=None, profile=out)
    with (folder / f"checks-{n}.txt").open("w") as f:
        stats = pstats.Stats(str(out), stream=f)
        stats.sort_stats("tottime").print_stats(40)
        stats.sort_stats("cumulative").print_stats(60)


if __name__ == "__main__":
    raise SystemExit(main())
