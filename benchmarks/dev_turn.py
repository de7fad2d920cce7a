"""What the development flow adds to a turn: ``rein dev`` beside ``rein next``, same run.

Sets up a flow in a temporary git repository (an imported plan, its graph approved), so
that a feature's instruction is pending, then times, as fresh processes the way an IDE
agent calls them, interleaved in one run:

- ``python -c pass``: the interpreter alone, the floor every turn pays;
- ``rein next``: the pending instruction, read from the run store (the reference);
- ``rein dev``: the same instruction through the flow (repository, settings, briefs and
  feature states checked first);
- ``rein dev status``: the flow's state, changing nothing.

The goal: ``rein dev`` adds under 20 ms to ``rein next``.

    .venv/bin/python benchmarks/dev_turn.py [--repeat 15]
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

REIN = str(Path(sys.executable).parent / "rein")
PLAN = {"verify": [sys.executable, "-m", "pytest", "-q"], "features": [
    {"id": f"f{i}", "title": f"Feature {i}", "priority": i,
     "depends_on": [f"f{i - 1}"] if i > 1 else []} for i in range(1, 9)]}


# Fresh processes with the bytecode cache on, as an installed rein runs after its first
# command.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str], cwd: Path, env: dict[str, str] = ENV
          ) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU (the child's user + sys: steadier on a loaded machine) in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, done


def workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="rein-dev-bench-"))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "specs").mkdir()
    (root / "specs" / "brief.md").write_text("# bench\n\nEight small features.\n")
    (root / "feature_list.json").write_text(json.dumps(PLAN))
    subprocess.run([REIN, "dev"], cwd=root, env=ENV, capture_output=True, check=False)
    listed = subprocess.run([REIN, "approvals", "list", "--json"], cwd=root, env=ENV,
                            capture_output=True, text=True, check=True).stdout
    approval = json.loads(listed)["approvals"][0]["approval_id"]
    subprocess.run([REIN, "approvals", "accept", approval], cwd=root, env=ENV,
                   capture_output=True, check=True)
    done = subprocess.run([REIN, "dev", "--json"], cwd=root, env=ENV, capture_output=True,
                          text=True, check=False)
    status = json.loads(done.stdout)
    assert status["instruction"]["node"] == "feature_f1", status
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    root = workspace()
    commands = {"python -c pass": [sys.executable, "-c", "pass"],
                "rein next": [REIN, "next"], "rein dev": [REIN, "dev"],
                "rein dev status": [REIN, "dev", "status"]}
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    try:
        for argv in commands.values():  # write the bytecode cache, fill the page cache
            timed(argv, root)
        for _ in range(args.repeat):
            for name, argv in commands.items():
                ms, cpu, done = timed(argv, root)
                if done.returncode != 3 and name != "python -c pass":
                    raise SystemExit(f"{name} exited {done.returncode}: {done.stderr}")
                times[name].append(ms)
                cpus[name].append(cpu)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'turn':22} {'wall min':>9} {'median':>8} {'max':>8}   {'cpu min':>8} "
          f"{'median':>8} {'max':>8}   ms, {args.repeat} runs each")
    for name in commands:
        w, c = times[name], cpus[name]
        print(f"{name:22} {min(w):9.1f} {statistics.median(w):8.1f} {max(w):8.1f}   "
              f"{min(c):8.1f} {statistics.median(c):8.1f} {max(c):8.1f}")
    for label, data in (("wall", times), ("cpu", cpus)):
        added = statistics.median(data["rein dev"]) - statistics.median(data["rein next"])
        print(f"rein dev adds {added:.1f} ms {label} (median) to rein next; goal: under 20 ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
