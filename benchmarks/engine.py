"""Engine overhead, end to end, side by side with Loro on the same graph.

Layered graphs of task nodes without criteria (10 nodes per layer, each node depending on
every node of the layer before), served by an instant worker. Each run is a subprocess in a
fresh temporary workspace, timed on the wall clock, ``--repeat`` times (min, median and
max are printed; the per-node figures and ratios use the median):

* rein: ``rein run GRAPH --approve DIGEST --json`` with the scripted worker enabled in the
  workspace's ``rein.toml`` (answers with no delay);
* Loro: ``loro graph run --yes GRAPH`` with its default ``mock`` provider, on the very same
  file (Loro reads AGS 1.0 as it is). ``loro-agent`` is installed from PyPI into a virtualenv
  of this script's own under the user's cache folder, never into the project's environment.

Both runs are checked, not just timed: the run must end ``succeeded`` with every node
succeeded, or the script stops with an error.

Run: .venv/bin/python benchmarks/engine.py [--repeat 3] [--no-loro] [--sizes 1,100,1000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child import measure  # the reaper beside this script

LORO_PACKAGE = "loro-agent==0.22.0"
LORO_REFERENCE_MS = 54.0  # ms per node measured earlier; used only when Loro cannot run here
WIDTH = 10


def layered(n: int, width: int = WIDTH) -> dict:
    """An AGS graph of ``n`` task nodes in layers of ``width``, fully joined layer to layer."""
    nodes = {}
    for i in range(n):
        layer = i // width
        deps = [f"n{j}" for j in range((layer - 1) * width, layer * width)] if layer else []
        node: dict = {"title": f"n{i}", "description": "work"}
        if deps:
            node["depends_on"] = deps
        nodes[f"n{i}"] = node
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": f"bench/layered-{n}",
            "title": f"{n} nodes in layers of {width}", "objective": "measure overhead",
            "requires_conformance": 3, "entrypoints": [f"n{i}" for i in range(min(width, n))],
            "nodes": nodes}


@dataclass(frozen=True, kw_only=True, slots=True)
class Timing:
    """Several runs of one harness on one graph size."""

    harness: str
    nodes: int
    runs: tuple[float, ...]  # wall seconds of each run
    peak_mb: float  # the largest peak RSS of the runs

    @property
    def seconds(self) -> float:
        return statistics.median(self.runs)

    @property
    def ms_per_node(self) -> float:
        return 1000 * self.seconds / self.nodes


def timed_process(argv: Sequence[str], *, cwd: Path, env: dict[str, str]
                  ) -> tuple[float, float, int, str, str]:
    """Run ``argv``; return (wall seconds, its own peak RSS in MB, exit code, stdout, stderr).

    Through :mod:`child`'s reaper: ``wait4`` on a child of this process would report this
    process's size as the child's peak (a fork copies it, and Linux keeps the largest)."""
    got = measure(argv, cwd=cwd, env=env)
    return got.wall, got.peak_mb, got.code, got.stdout, got.stderr


def clean_env(home: Path) -> dict[str, str]:
    """A minimal environment: a throwaway HOME, so no user configuration leaks in."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    if os.environ.get("PYTHONPATH"):  # to measure another checkout's src the same way
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


# -- rein ---------------------------------------------------------------------------------


def rein_command() -> list[str]:
    script = Path(sys.executable).with_name("rein")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from rein.cli import run; run()"]


def run_rein(graph: dict, repeat: int) -> Timing:
    from rein.formats.canonical import ags_digest

    n = len(graph["nodes"])
    digest = ags_digest(graph)
    answers = {"nodes": {nid: [{"outputs": {}}] for nid in graph["nodes"]}}
    runs: list[float] = []
    peaks: list[float] = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="rein-bench-") as tmp:
            ws = Path(tmp)
            (ws / "home").mkdir()
            (ws / "g.agraph.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
            (ws / "answers.yaml").write_text(yaml.safe_dump(answers, sort_keys=False))
            # The user's file, not the project's: a project file needs trust to enable it.
            user = ws / "home" / ".config" / "rein" / "rein.toml"
            user.parent.mkdir(parents=True)
            user.write_text(f'[workers.scripted]\nanswers = "{ws / "answers.yaml"}"\n')
            seconds, peak, code, out, err = timed_process(
                [*rein_command(), "run", "g.agraph.yaml", "--approve", digest, "--json"],
                cwd=ws, env=clean_env(ws / "home"))
            check_rein(n, code, out, err)
        runs.append(seconds)
        peaks.append(peak)
    return Timing(harness="rein", nodes=n, runs=tuple(runs), peak_mb=max(peaks))


def check_rein(n: int, code: int, out: str, err: str) -> None:
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    summary = lines[-1] if lines else {}
    done = sum(1 for e in lines if e.get("type") == "node/finished"
               and e["payload"].get("status") == "succeeded")
    if code != 0 or summary.get("status") != "succeeded" or done != n:
        raise SystemExit(f"rein run did not succeed (exit {code}, {done}/{n} nodes "
                         f"succeeded): {summary}\n{err[-2000:]}")


# -- Loro ---------------------------------------------------------------------------------


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rein-bench"


def ensure_loro(venv: Path) -> Path:
    """The ``loro`` executable of a virtualenv of our own, created on first use."""
    exe = venv / "bin" / "loro"
    if exe.exists():
        return exe
    print(f"installing {LORO_PACKAGE} into {venv} (once) ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    LORO_PACKAGE], check=True)
    if not exe.exists():
        raise RuntimeError(f"{LORO_PACKAGE} installed no `loro` executable")
    return exe


def run_loro(exe: Path, graph: dict, repeat: int) -> Timing:
    n = len(graph["nodes"])
    runs: list[float] = []
    peaks: list[float] = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="loro-bench-") as tmp:
            ws = Path(tmp)
            (ws / "home").mkdir()
            # The graph sits in the workspace root: Loro resolves files against its folder.
            (ws / "g.agraph.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
            seconds, peak, code, out, err = timed_process(
                [str(exe), "graph", "run", "--yes", "g.agraph.yaml"],
                cwd=ws, env=clean_env(ws / "home"))
            check_loro(n, code, out, err)
        runs.append(seconds)
        peaks.append(peak)
    return Timing(harness="loro", nodes=n, runs=tuple(runs), peak_mb=max(peaks))


class LoroFailed(RuntimeError):
    """Loro did not complete the graph: reported, and the reference figure used instead."""


def check_loro(n: int, code: int, out: str, err: str) -> None:
    try:
        record = json.loads(out[out.index("{"):])
    except ValueError:
        record = {}
    done = sum(1 for node in record.get("nodes", []) if node.get("status") == "succeeded")
    if code != 0 or record.get("status") != "succeeded" or done != n:
        raise LoroFailed(f"loro graph run did not succeed (exit {code}, {done}/{n} nodes "
                         f"succeeded)\n{err[-2000:]}")


# -- report -------------------------------------------------------------------------------


def report(timings: list[Timing], loro_reference_ms: float, measured: bool) -> None:
    """The table, then the two targets: per-node ratio at 100 nodes, and linearity."""
    fixed = {t.harness: t.seconds for t in timings if t.nodes == 1}
    print(f"{'harness':<8}{'nodes':>7}{'min s':>9}{'median s':>10}{'max s':>9}{'ms/node':>9}"
          f"{'marginal':>10}{'ratio':>8}{'peak MB':>9}")
    for t in timings:
        marginal = ""
        if t.nodes > 1 and t.harness in fixed:
            marginal = f"{1000 * (t.seconds - fixed[t.harness]) / (t.nodes - 1):.2f}"
        ratio = f"{loro_reference_ms / t.ms_per_node:.1f}x" if t.nodes > 1 else ""
        print(f"{t.harness:<8}{t.nodes:>7}{min(t.runs):>9.3f}{t.seconds:>10.3f}"
              f"{max(t.runs):>9.3f}{t.ms_per_node:>9.2f}{marginal:>10}{ratio:>8}"
              f"{t.peak_mb:>9.0f}")
    source = "measured in this run" if measured else "REFERENCE figure, not measured here"
    print(f"\nratio = Loro's ms per node on the 100-node graph ({loro_reference_ms:.1f}, "
          f"{source}) / the row's ms per node; ms/node = median / nodes; marginal = "
          "(median - the 1-node median) / (nodes - 1)")
    by = {(t.harness, t.nodes): t for t in timings}
    r100, r1000 = by.get(("rein", 100)), by.get(("rein", 1000))
    if r100:
        ratio = loro_reference_ms / r100.ms_per_node
        print(f"target: rein >= 10x less time per node than Loro at 100 nodes: {ratio:.1f}x "
              f"-> {'met' if ratio >= 10 else 'MISSED'}")
    if r1000:
        print(f"target: at most 5 ms per node at 1,000 nodes (median): "
              f"{r1000.ms_per_node:.2f} -> {'met' if r1000.ms_per_node <= 5 else 'MISSED'}")
    if r100 and r1000:
        growth = r1000.seconds / r100.seconds
        print(f"target: 1,000 nodes in about 10x the 100-node time (linear): {growth:.1f}x "
              f"-> {'met' if growth <= 11 else 'MISSED'}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per point")
    parser.add_argument("--sizes", default="1,100,1000", help="rein graph sizes")
    parser.add_argument("--no-loro", action="store_true", help="skip Loro")
    parser.add_argument("--loro-venv", type=Path, default=cache_dir() / "loro-agent-0.22.0",
                        help="where loro-agent is (or gets) installed")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    timings: list[Timing] = []
    loro_ms, measured = LORO_REFERENCE_MS, False
    if not args.no_loro:
        try:
            exe = ensure_loro(args.loro_venv)
            # Loro's managed default refuses graphs above 100 nodes, hence these two sizes.
            for n in (1, 100):
                print(f"loro {n} node(s) ...", file=sys.stderr)
                timings.append(run_loro(exe, layered(n), args.repeat))
            loro_ms, measured = timings[-1].ms_per_node, True
        except (OSError, subprocess.CalledProcessError, RuntimeError) as exc:
            timings = [t for t in timings if t.harness != "loro"]
            print(f"Loro unavailable ({exc}); comparing with the reference figure",
                  file=sys.stderr)
    for n in sizes:
        print(f"rein {n} node(s) ...", file=sys.stderr)
        timings.append(run_rein(layered(n), args.repeat))
    report(timings, loro_ms, measured)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
