"""How long one driver turn takes: ``rein next`` (must stay under 100 ms) and ``rein submit``.

Runs the demo graph in a temporary git repository and times, as fresh processes the way an
IDE agent calls them, side by side in one run:

- ``python -c pass``: the interpreter alone, the floor every turn pays;
- ``rein next``: one instruction, read from the run store;
- ``rein submit``: an envelope checked, consumed, the run advanced to its next wait
  (a command criterion included).

    .venv/bin/python benchmarks/driver_turn.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "driver-demo.agraph.yaml"
REIN = str(Path(sys.executable).parent / "rein")
RIGHT = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'


CPU: dict[str, list[float]] = {}


def timed(argv: list[str], cwd: Path, name: str = ""
          ) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall time in ms; the child's user+sys CPU time is kept in CPU[name] (load-proof)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    CPU.setdefault(name, []).append(cpu)
    return wall, done


def workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="rein-bench-"))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    shutil.copyfile(DEMO, root / DEMO.name)
    digest = subprocess.run([REIN, "graph", "digest", DEMO.name], cwd=root,
                            capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([REIN, "run", DEMO.name, "--approve", digest], cwd=root,
                   capture_output=True, check=False)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    base, nexts, submits = [], [], []
    for _ in range(args.repeat):
        root = workspace()
        base.append(timed([sys.executable, "-c", "pass"], root, "python -c pass")[0])
        ms, done = timed([REIN, "next", "--json"], root, "rein next")
        nexts.append(ms)
        envelope = json.loads(done.stdout)["example"]
        (root / "greet.py").write_text(RIGHT)
        (root / ".rein" / "inbox.json").write_text(json.dumps(envelope))
        ms, done = timed([REIN, "submit"], root, "rein submit")
        assert done.returncode == 3, done.stderr  # now waiting at the gate
        submits.append(ms)
        shutil.rmtree(root)
    rows = [("python -c pass", base), ("rein next", nexts), ("rein submit", submits)]
    floor = statistics.median(base)
    load = os.getloadavg()[0]
    print(f"{'':<16}{'median ms':>10}{'p90 ms':>9}{'x python':>10}{'cpu ms':>9}"
          f"   (n={args.repeat}, load average {load:.1f} on {os.cpu_count()} cores)")
    for name, values in rows:
        values = sorted(values)
        p90 = values[int(0.9 * (len(values) - 1))]
        med = statistics.median(values)
        cpu = statistics.median(CPU[name])
        print(f"{name:<16}{med:>10.1f}{p90:>9.1f}{med / floor:>10.1f}{cpu:>9.1f}")


if __name__ == "__main__":
    main()
