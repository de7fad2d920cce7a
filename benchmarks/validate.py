"""Validation speed and memory: ``rein graph validate --strict`` beside ``ags-validate --strict``.

Run on demand (``make bench`` or ``.venv/bin/python benchmarks/validate.py``), never in the
test suite. Both validators run as subprocesses on the same files in the same run:

* a small graph (``examples/driver-demo.agraph.yaml``, 2 KB): start-up dominates;
* generated layered graphs of 1,000, 5,000 and 10,000 nodes (YAML, about 600 bytes per
  node: inputs that read predecessors' outputs, criteria, estimates), each in three forms:
  ``clean`` (no finding), ``AG908`` (no cost preview: one warning, reported at the top of
  the file) and ``AG003`` (one unknown field on the last node: one error, at the end).

For each it prints min / median / max wall time over the repeats, the median CPU time (user +
system, from wait4: the figure to read on a shared machine) and the peak resident memory of
the child (its own, from wait4), checks that both validators report the same finding codes
and agree on failure, and only then prints the ratios (reference / rein) of the median CPU
times and of the median wall times. Sizes above ``--reference-max`` (10,000 nodes) run rein
alone: the reference takes minutes per 10,000 nodes; there the row gives rein's CPU time and
peak memory against the goal of staying under 1 GB. A file over the loader's default limit of
32 MiB (100,000 nodes make about 70 MB) is validated through ``validate_path`` with the limit
raised to its size, printing the same JSON as the command.
``--baseline SRC`` adds a column for another rein source tree (such as an older checkout's
``src``) run the same way, so before and after come from one run.

Children run with bytecode caching on (in a temporary cache folder, warmed once), as an
installed rein runs: without it every start compiles rein's sources again.

    python benchmarks/validate.py                          # all of it (the 10k reference is slow)
    python benchmarks/validate.py --sizes 1000 --repeat 5
    python benchmarks/validate.py --baseline /tmp/old/src  # before/after in one run
    python benchmarks/validate.py --sizes 10000 100000 --cases AG908 clean AG003 --repeat 3 \
        --no-small                                         # the goals' rows, in one run
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# Nodes per layer. The reference validator walks predecessors recursively and overflows
# Python's stack on graphs more than about 900 layers deep, so keep graphs wide enough.
WIDTH = 50
SMALL = ROOT / "examples" / "driver-demo.agraph.yaml"
CASES = ("clean", "AG908", "AG003")


# ---------------------------------------------------------------------------- generation


def generate(nodes: int, width: int = WIDTH) -> str:
    """A valid graph: layers of ``width`` tasks, each reading one or two nodes above it."""
    lines = [
        'ags_version: "1.0"',
        "kind: AgenticGraph",
        f"id: bench/layered-{nodes}",
        f"title: Layered benchmark graph of {nodes} nodes",
        "objective: Exercise every validation layer on a large, valid document.",
        "requires_conformance: 2",
        "params:",
        "  topic:",
        "    type: string",
        "    description: What every node works on.",
        "    required: false",
        "    default: benchmarks",
        f"constraints: {{max_cost_usd: {nodes}, max_node_executions: {2 * nodes}}}",
        "entrypoints: [" + ", ".join(_id(i) for i in range(min(width, nodes))) + "]",
        "nodes:",
    ]
    read: set[int] = set()
    for i in range(nodes):
        layer = i // width
        preds = [] if layer == 0 else sorted({i - width, (layer - 1) * width + (i * 7) % width})
        read.update(preds)
        lines += _node(i, preds)
    # Every output must be read (AG904): results no later node reads become graph outputs.
    lines.append("outputs:")
    for i in range(nodes):
        if i not in read:
            lines += [f"  final_{i}:", "    type: text", f"    description: Result of node {i}.",
                      f"    from: nodes.{_id(i)}.outputs.result"]
    return "\n".join(lines) + "\n"


def _id(i: int) -> str:
    return f"n{i:05d}"


def _node(i: int, preds: list[int]) -> list[str]:
    out = [f"  {_id(i)}:", f"    title: Step {i}",
           f"    description: Combine the notes of step {i}."]
    if preds:
        out.append("    depends_on: [" + ", ".join(_id(p) for p in preds) + "]")
        out.append("    inputs:")
        for p in preds:
            out += [f"      from_{p}:", "        type: text", f"        description: Note {p}.",
                    f"        from: nodes.{_id(p)}.outputs.result"]
    else:
        out += ["    inputs:", ("      topic: {type: string, description: Topic., "
                "from: params.topic}")]
    out += [
        "    outputs:",
        "      result: {type: text, description: The note.}",
        "    intelligence: {tier: minimal}",
        "    success:",
        "      criteria:",
        ("        - {id: written, kind: artifact_present, description: Note made., "
        "output: result}"),
        "        - id: long_enough",
        "          kind: expression",
        "          description: Not a stub.",
        "          expr: len(self.outputs.result) > 10",
        "    estimate: {effort: xs, tokens: 1000, cost_usd: 0.01}",
    ]
    return out


def with_finding(text: str, nodes: int, case: str) -> str:
    """The clean graph turned into one of the cases with a finding."""
    if case == "AG908":  # neither a cost ceiling nor any estimate
        text = text.replace(f"max_cost_usd: {nodes}, ", "")
        return "".join(line for line in text.splitlines(keepends=True)
                       if not line.startswith("    estimate:"))
    if case == "AG003":  # an unknown field on the last node, near the end of the file
        last = f"  {_id(nodes - 1)}:\n"
        return text.replace(last, last + "    colour: blue\n")
    return text


# ---------------------------------------------------------------------------- measuring


@dataclass(frozen=True, kw_only=True, slots=True)
class Sample:
    seconds: float
    cpu: float
    peak_mb: float
    code: int
    stdout: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Runs:
    """Repeated runs of one command: wall times, the highest peak RSS, the last output."""

    seconds: tuple[float, ...]
    cpu: tuple[float, ...]
    peak_mb: float
    code: int
    stdout: str

    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    def spread(self) -> str:
        """min / median / max in seconds (one run: just the time)."""
        s = sorted(self.seconds)
        if len(s) == 1:
            return f"{s[0]:.3f}"
        return f"{s[0]:.3f} / {statistics.median(s):.3f} / {s[-1]:.3f}"


def measure(argv: list[str], env: dict[str, str]) -> Sample:
    """Run a child, return its wall time, its CPU time (user + system) and its own peak RSS
    (wait4, not the children total)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return Sample(seconds=seconds, cpu=usage.ru_utime + usage.ru_stime,
                  peak_mb=usage.ru_maxrss / 1024, code=proc.returncode, stdout=text)


def interleaved(commands: dict[str, tuple[list[str], dict[str, str], int]]) -> dict[str, Runs]:
    """Run each command its number of times, taking turns (a, b, c, a, b, c, ...), so that a
    change in the machine's load falls on every command alike."""
    samples: dict[str, list[Sample]] = {name: [] for name in commands}
    for turn in range(max(repeat for _, _, repeat in commands.values())):
        for name, (argv, env, repeat) in commands.items():
            if turn < repeat:
                samples[name].append(measure(argv, env))
    return {name: Runs(seconds=tuple(x.seconds for x in got), cpu=tuple(x.cpu for x in got),
                       peak_mb=max(x.peak_mb for x in got), code=got[-1].code,
                       stdout=got[-1].stdout) for name, got in samples.items()}


def child_env(cache: str, src: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    if src is not None:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


def rein_findings(stdout: str) -> list[str]:
    docs = json.loads(stdout)["documents"]
    return sorted(f["code"] for d in docs for f in d["findings"])


def reference_findings(stdout: str) -> list[str]:
    codes = []
    for line in stdout.splitlines():
        if line.startswith("  [") and "] AG" in line:
            codes.append(line.split("] ", 1)[1].split(":", 1)[0])
    return sorted(codes)


# ---------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 5000, 10000],
                        help="graph sizes in nodes (none: only the 2 KB graph)")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--repeat", type=int, default=5, help="runs of rein per file")
    parser.add_argument("--reference-repeat", type=int, default=3,
                        help="runs of ags-validate per file below 10,000 nodes (default 3)")
    parser.add_argument("--big-reference-repeat", type=int, default=1,
                        help="runs of ags-validate at 10,000 nodes and more (default 1)")
    parser.add_argument("--reference-max", type=int, default=10_000,
                        help="the largest size the reference runs at (above it, rein alone)")
    parser.add_argument("--width", type=int, default=WIDTH, help="nodes per layer")
    parser.add_argument("--baseline", metavar="SRC",
                        help="also run the rein whose package is in SRC (a source tree)")
    parser.add_argument("--no-small", action="store_true", help="skip the 2 KB graph")
    parser.add_argument("--instructions", action="store_true",
                        help="count the 2 KB graph's instructions with valgrind (callgrind): "
                             "repeatable on a loaded machine, where wall times are not")
    args = parser.parse_args()
    rein, reference = str(BIN / "rein"), str(BIN / "ags-validate")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        envs = {"rein": child_env(str(Path(tmp) / "pyc"))}
        if args.baseline:
            envs["before"] = child_env(str(Path(tmp) / "pyc-before"), args.baseline)
        ref_env = child_env(str(Path(tmp) / "pyc"))
        # Fill the bytecode caches: with a cache prefix, Python reads no __pycache__ folder,
        # so the reference's first run would compile it too.
        for env in envs.values():
            measure([rein, "graph", "validate", str(SMALL)], env)
        measure([reference, str(SMALL)], ref_env)
        print("seconds as min / median / max of the runs; MB = the highest peak RSS\n")
        if not args.no_small:
            ok = _small(args, rein, reference, envs, ref_env) and ok
        if args.instructions:
            _instructions(rein, reference, envs, ref_env, tmp)
        if not args.sizes:
            return 0 if ok else 1
        header = (f"{'nodes':>7} {'case':<6} {'MB':>5} | " + " | ".join(
            f"{name + ' wall s':<24} {'cpu s':>6} {'MB':>5}" for name in envs)
            + f" | {'ags-validate wall s':<24} {'cpu s':>6} {'MB':>5} | cpu ratio | wall ratio"
            + " | same findings")
        print(header)
        print("-" * len(header))
        for n in args.sizes:
            clean = generate(n, args.width)
            for case in args.cases:
                path = Path(tmp) / f"{case}-{n}.agraph.yaml"
                path.write_text(with_finding(clean, n, case), encoding="utf-8")
                repeat = args.big_reference_repeat if n >= 10_000 else args.reference_repeat
                if n > args.reference_max:
                    ok = _alone(n, case, path, envs, rein, args.repeat) and ok
                else:
                    ok = _row(n, case, path, envs, ref_env, rein, reference, args.repeat,
                              repeat) and ok
                path.unlink()
    return 0 if ok else 1


def _small(args: argparse.Namespace, rein: str, reference: str, envs: dict[str, dict[str, str]],
           ref_env: dict[str, str]) -> bool:
    repeat = max(10, args.repeat)
    argv = [rein, "graph", "validate", "--strict", "--json", str(SMALL)]
    got = interleaved({**{name: (argv, env, repeat) for name, env in envs.items()},
                       "ags-validate": ([reference, "--strict", str(SMALL)], ref_env, repeat),
                       "python -c pass": ([sys.executable, "-c", "pass"], ref_env, repeat)})
    theirs, floor = got.pop("ags-validate"), got.pop("python -c pass")
    ours = got
    same = all(rein_findings(r.stdout) == reference_findings(theirs.stdout) for r in
               ours.values())
    size = SMALL.stat().st_size / 1000
    print(f"{SMALL.name} ({size:.1f} KB), {repeat} runs each:")
    for name, r in ours.items():
        print(f"  {name:<13} {r.spread()} s  {r.peak_mb:.0f} MB  "
              f"ratio {statistics.median(theirs.seconds) / statistics.median(r.seconds):.2f}x"
              f" (medians)")
    print(f"  {'ags-validate':<13} {theirs.spread()} s  {theirs.peak_mb:.0f} MB")
    print(f"  {'python -c pass':<13} {floor.spread()} s  (the interpreter alone)")
    print(f"  same findings: {'yes' if same else 'NO'}\n")
    return same


def _instructions(rein: str, reference: str, envs: dict[str, dict[str, str]],
                  ref_env: dict[str, str], tmp: str) -> None:
    """Instructions executed (callgrind's Ir) by each command on the 2 KB graph, once each."""
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (apt-get install valgrind)\n")
        return
    commands = {**{name: ([rein, "graph", "validate", "--strict", "--json", str(SMALL)], env)
                   for name, env in envs.items()},
                "ags-validate": ([reference, "--strict", str(SMALL)], ref_env),
                "python -c pass": ([sys.executable, "-c", "pass"], ref_env)}
    print(f"{SMALL.name}, instructions executed (valgrind --tool=callgrind, Ir):")
    counts: dict[str, int] = {}
    for name, (argv, env) in commands.items():
        out = Path(tmp) / "callgrind.out"
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                               *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                              check=False)
        found = [line for line in done.stderr.splitlines() if "Collected :" in line]
        counts[name] = int(found[-1].rsplit(":", 1)[1].strip()) if found else 0
        print(f"  {name:<14} {counts[name] / 1e6:>8.1f} M", flush=True)
    if counts.get("rein"):
        print(f"  ratio ags-validate / rein: {counts['ags-validate'] / counts['rein']:.2f}x\n")


def _row(n: int, case: str, path: Path, envs: dict[str, dict[str, str]],
         ref_env: dict[str, str], rein: str, reference: str, repeat: int,
         reference_repeat: int) -> bool:
    argv = [rein, "graph", "validate", "--strict", "--json", str(path)]
    got = interleaved({**{name: (argv, env, repeat) for name, env in envs.items()},
                       "ags-validate": ([reference, "--strict", str(path)], ref_env,
                                        reference_repeat)})
    theirs = got.pop("ags-validate")
    ours = got
    expected = reference_findings(theirs.stdout)
    same = all(rein_findings(r.stdout) == expected and (r.code == 0) == (theirs.code == 0)
               for r in ours.values())
    size_mb = path.stat().st_size / 1e6
    cells = " | ".join(f"{r.spread():<24} {r.cpu_median():>6.3f} {r.peak_mb:>5.0f}"
                       for r in ours.values())
    now = ours["rein"]
    ratio = statistics.median(theirs.seconds) / statistics.median(now.seconds)
    cpu_ratio = theirs.cpu_median() / now.cpu_median()
    shown = ", ".join(expected) or "none"
    nan = float("nan")
    print(f"{n:>7} {case:<6} {size_mb:>5.1f} | {cells} | {theirs.spread():<24} "
          f"{theirs.cpu_median():>6.2f} {theirs.peak_mb:>5.0f} | "
          f"{cpu_ratio if same else nan:>8.1f}x | {ratio if same else nan:>9.1f}x | "
          f"{'yes (' + shown + ')' if same else 'NO'}", flush=True)
    if not same:
        for name, r in ours.items():
            print(f"    {name}: exit {r.code}, {rein_findings(r.stdout)[:10]}")
        print(f"    ags:  exit {theirs.code}, {expected[:10]}")
    return same


# `rein graph validate` reads documents up to 32 MiB (the loader's default max_bytes), and a
# graph of 100,000 nodes here is about 70 MB: above that, the same validation through its
# Python entry point, with the limit raised to the file's size, printing the same JSON.
_VALIDATE_LARGE = """
import json, sys
from rein.formats.ags import validate_path
from rein.formats.loader import LoadLimits
report = validate_path(sys.argv[1], limits=LoadLimits(max_bytes=int(sys.argv[2])))
print(json.dumps({"documents": [report.to_json()]}, ensure_ascii=False, indent=2))
"""
_DEFAULT_MAX_BYTES = 32 * 1024 * 1024


def _alone(n: int, case: str, path: Path, envs: dict[str, dict[str, str]], rein: str,
           repeat: int) -> bool:
    """A size the reference does not run at: rein's times and peak memory, and the finding
    codes the case must give (checked, since no reference compares them)."""
    size = path.stat().st_size
    argv = ([rein, "graph", "validate", "--strict", "--json", str(path)]
            if size <= _DEFAULT_MAX_BYTES else
            [sys.executable, "-c", _VALIDATE_LARGE, str(path), str(size)])
    got = interleaved({name: (argv, env, repeat) for name, env in envs.items()})
    expected = {"clean": [], "AG908": ["AG908"], "AG003": ["AG003"]}[case]
    same = all(rein_findings(r.stdout) == expected for r in got.values())
    size_mb = path.stat().st_size / 1e6
    cells = " | ".join(f"{r.spread():<24} {r.cpu_median():>6.3f} {r.peak_mb:>5.0f}"
                       for r in got.values())
    peak = got["rein"].peak_mb
    print(f"{n:>7} {case:<6} {size_mb:>5.1f} | {cells} | {'(not run: --reference-max)':<37}"
          f" | peak {peak:.0f} MB: {'under' if peak < 1024 else 'OVER'} 1 GB | "
          f"{'yes (' + (', '.join(expected) or 'none') + ')' if same else 'NO'}", flush=True)
    return same and peak < 1024


if __name__ == "__main__":
    raise SystemExit(main())
