"""What the development flow adds to a turn: ``rein dev`` beside ``rein next``, same run.

Sets up a flow in a temporary git repository (an imported plan, its graph approved), so
that a feature's instruction is pending, then times, as fresh processes the way an IDE
agent calls them, interleaved in one run:

- ``python -c pass``: the interpreter alone, the floor every turn pays;
- ``rein next``: the pending instruction, read from the run store (the reference);
- ``rein dev``: the same instruction through the flow (repository, settings, briefs and
  feature states checked first);
- ``rein dev status``: the flow's state, changing nothing.

The goal: ``rein dev`` adds under 20 ms to ``rein next``. These are cold turns
(``REIN_WARM=off``); the ``warm:`` rows are the same turns handed to a warm server
(docs/driver.md, "Warm turns") that an untimed turn started in a runtime folder of the
benchmark's own, interleaved with the cold ones; their CPU column adds the client's and the
forked turn's (the server's reaped children, in clock ticks: 10 ms steps). ``--no-warm``
leaves them out.

    .venv/bin/python benchmarks/dev_turn.py [--repeat 15] [--no-warm]
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

from warm_probe import WarmServer

REIN = str(Path(sys.executable).parent / "rein")
PLAN = {"verify": [sys.executable, "-m", "pytest", "-q"], "features": [
    {"id": f"f{i}", "title": f"Feature {i}", "priority": i,
     "depends_on": [f"f{i - 1}"] if i > 1 else []} for i in range(1, 9)]}


# Cold turns, as fresh processes with the bytecode cache on: the warm server that plain
# `rein next` turns are handed to (docs/driver.md, "Warm turns") would time the client
# of one command against the whole of the other.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["REIN_WARM"] = "off"


SERVER: list[WarmServer] = []  # the warm rows' server, once it runs


def timed(argv: list[str], cwd: Path, env: dict[str, str] = ENV
          ) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU (the child's user + sys: steadier on a loaded machine) in ms; a warm
    turn's CPU adds what the server's child spent."""
    server = SERVER[0] if SERVER and env is SERVER[0].env else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    served = server.ticks() if server else 0
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu + (server.turn_cpu_ms(served) if server else 0.0), done


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
    parser.add_argument("--no-warm", action="store_true", help="cold turns only")
    args = parser.parse_args()
    root = workspace()
    commands = {"python -c pass": [sys.executable, "-c", "pass"],
                "rein next": [REIN, "next"], "rein dev": [REIN, "dev"],
                "rein dev status": [REIN, "dev", "status"]}
    if not args.no_warm:
        commands.update({"warm: rein next": [REIN, "next"], "warm: rein dev": [REIN, "dev"],
                         "warm: rein dev status": [REIN, "dev", "status"]})
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    try:
        if not args.no_warm:
            SERVER.append(WarmServer(ENV))
            SERVER[0].start(root)

        def env_of(name: str) -> dict[str, str]:
            return SERVER[0].env if name.startswith("warm:") else ENV

        for name, argv in commands.items():  # warm the bytecode and the page cache
            timed(argv, root, env_of(name))
        for _ in range(args.repeat):
            for name, argv in commands.items():
                ms, cpu, done = timed(argv, root, env_of(name))
                if done.returncode != 3 and name != "python -c pass":
                    raise SystemExit(f"{name} exited {done.returncode}: {done.stderr}")
                times[name].append(ms)
                cpus[name].append(cpu)
    finally:
        for server in SERVER:
            server.stop()
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
    if "warm: rein dev" in times:
        added = statistics.median(times["warm: rein dev"]) - \
            statistics.median(times["warm: rein next"])
        print(f"warm: rein dev adds {added:.1f} ms wall (median) to warm: rein next")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
