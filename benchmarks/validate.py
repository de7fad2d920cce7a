"""Validation speed and memory: ``rein graph validate --strict`` beside ``ags-validate --strict``.

Run on demand (``make bench`` or ``.venv/bin/python benchmarks/validate.py``), never in the
test suite. It generates valid layered graphs of 1,000, 5,000 and 10,000 nodes (YAML, about
600 bytes per node: inputs that read predecessors' outputs, criteria, estimates), runs both
validators on the same files in the same run as subprocesses, keeps the best of N wall
times and the peak resident memory of each child, checks that both report the same
findings (none), and prints a side-by-side table with the ratio. It also times
``rein --help``.

    python benchmarks/validate.py                 # 1k, 5k, 10k nodes, best of 3
    python benchmarks/validate.py --sizes 1000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
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
        out += ["    inputs:", "      topic: {type: string, description: Topic., "
                "from: params.topic}"]
    out += [
        "    outputs:",
        "      result: {type: text, description: The note.}",
        "    intelligence: {tier: minimal}",
        "    success:",
        "      criteria:",
        "        - {id: written, kind: artifact_present, description: Note made., "
        "output: result}",
        "        - id: long_enough",
        "          kind: expression",
        "          description: Not a stub.",
        "          expr: len(self.outputs.result) > 10",
        "    estimate: {effort: xs, tokens: 1000, cost_usd: 0.01}",
    ]
    return out


# ---------------------------------------------------------------------------- measuring


@dataclass(frozen=True, kw_only=True, slots=True)
class Sample:
    seconds: float
    peak_mb: float
    code: int
    stdout: str


def measure(argv: list[str]) -> Sample:
    """Run a child, return its wall time and its own peak RSS (wait4, not the children total)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return Sample(seconds=seconds, peak_mb=usage.ru_maxrss / 1024, code=proc.returncode,
                  stdout=text)


def best(argv: list[str], repeat: int) -> Sample:
    samples = [measure(argv) for _ in range(repeat)]
    fastest = min(samples, key=lambda s: s.seconds)
    return Sample(seconds=fastest.seconds, peak_mb=max(s.peak_mb for s in samples),
                  code=fastest.code, stdout=fastest.stdout)


def rein_findings(sample: Sample) -> list[str]:
    docs = json.loads(sample.stdout)["documents"]
    return sorted(f["code"] for d in docs for f in d["findings"])


def reference_findings(sample: Sample) -> list[str]:
    codes = []
    for line in sample.stdout.splitlines():
        if line.startswith("  [") and "] AG" in line:
            codes.append(line.split("] ", 1)[1].split(":", 1)[0])
    return sorted(codes)


# ---------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    parser.add_argument("--width", type=int, default=WIDTH, help="nodes per layer")
    parser.add_argument("--reference-repeat", type=int, default=1,
                        help="runs of ags-validate per size (it is slow; default 1)")
    args = parser.parse_args()
    rein, reference = str(BIN / "rein"), str(BIN / "ags-validate")

    startup = best([rein, "--help"], 10)
    print(f"rein --help: {startup.seconds * 1000:.0f} ms (best of 10), "
          f"{startup.peak_mb:.0f} MB\n")

    header = (f"{'nodes':>6} {'MB':>5} | {'rein s':>7} {'rein MB':>8} {'ms/1k':>6} | "
              f"{'ags s':>7} {'ags MB':>8} | {'ratio':>6} | same findings")
    print(header)
    print("-" * len(header))
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"layered-{n}.agraph.yaml"
            path.write_text(generate(n, args.width), encoding="utf-8")
            size_mb = path.stat().st_size / 1e6
            ours = best([rein, "graph", "validate", "--strict", "--json", str(path)],
                        args.repeat)
            theirs = best([reference, "--strict", str(path)], args.reference_repeat)
            same = rein_findings(ours) == reference_findings(theirs) == []
            same = same and ours.code == theirs.code == 0
            ok = ok and same
            print(f"{n:>6} {size_mb:>5.1f} | {ours.seconds:>7.2f} {ours.peak_mb:>8.0f} "
                  f"{ours.seconds / n * 1e6:>6.0f} | {theirs.seconds:>7.2f} "
                  f"{theirs.peak_mb:>8.0f} | {theirs.seconds / ours.seconds:>5.1f}x | "
                  f"{'yes (none)' if same else 'NO'}")
            if not same:
                print(f"    rein: exit {ours.code}, {rein_findings(ours)[:10]}")
                print(f"    ags:  exit {theirs.code}, {reference_findings(theirs)[:10]}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
