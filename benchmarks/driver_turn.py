"""How long one driver turn takes: ``rein next`` and ``rein submit``, beside the floor.

Runs the demo graph (examples/driver-demo.agraph.yaml) in a fresh temporary git repository
per repeat and times, as fresh processes the way an IDE agent calls them, side by side in
one run:

- ``python -c pass``: the interpreter alone, the floor every turn pays;
- ``rein --help``: the command line alone;
- ``rein next``: one instruction, read from the run store (goal: under 100 ms);
- ``rein submit``: an envelope checked, consumed, the run advanced to its next wait (the
  gate), which runs the node's two criteria; printed as the whole, the checks it ran (the
  criteria's own ``duration_seconds`` from the run's record) and rein's own time, the whole
  minus the checks (goal: under 100 ms).

Each row gives min / median / max wall time over ``--repeat`` and min / median / max CPU
time of the child (user + system, its own children included: the load of the machine moves
wall time far more than CPU time), each with its median over ``python -c pass``'s. The children run with Python's bytecode cache on, as an
installed rein does after its first command (one untimed turn first writes the cache);
``--no-bytecode-cache`` keeps ``PYTHONDONTWRITEBYTECODE`` if it is set, so every module is
compiled again each time. ``--files N`` adds N small files (100 to a folder) to the
workspace before the run starts: a large tree, which every turn's snapshot walks.

``--before SRC`` times, turn for turn with this rein, another one's source (put first on
``PYTHONPATH``): a before/after comparison under the same load.

``--rein-toml [FILE]`` puts a ``rein.toml`` in every workspace before its run starts: FILE,
or without one a project file of the kind an IDE agent's project has (the driver, a
narrowed policy, a lower limit, the embedded store). A cold ``rein next`` reads it beside
the store when it leaves the answer alone (rein/workers/driver/glance_config.py), and
went through the Harness for any rein.toml before.

``--imports`` also times, in fresh interpreters with the bytecode cache on, importing
every module one cold ``rein submit`` imports (listed from a submit, in the order it
imported them) and ``asyncio`` alone with what it brings (min / median / max over
``--repeat``): the share of a submit that is imports, and of that, the event loop's.

``--instructions`` also counts, once per command, the CPU instructions of the rein process
itself under valgrind's callgrind (the checks' own processes are not traced, so for
``rein submit`` the count is rein's own work): a figure the load of the machine does not
move, beside ``python -c pass``'s (and as a multiple of it: the cold ``rein next``'s goal
is at most 2.5 times).

    .venv/bin/python benchmarks/driver_turn.py [--repeat 15] [--files 20000] [--before SRC]
        [--rein-toml [FILE]] [--instructions] [--imports]
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

# --rein-toml without a file: a project's rein.toml that leaves `rein next`'s answer alone.
PROJECT_TOML = """\
# a project an IDE agent drives: the driver serves its nodes, rein's policy narrowed
[driver]
enabled = true

[policy]
shell = "ask"
network = "deny"
max_turns = 40
max_cost_usd = 5.0
deny_paths = [".git", ".rein", "secrets"]

[limits]
max_depth = 64     # the default is 128

[store]            # the embedded store, .rein/rein.db
"""
REIN_TOML: list[str] = []  # the text --rein-toml gives, if any

WALL: dict[str, list[float]] = {}
CPU: dict[str, list[float]] = {}


def timed(argv: list[str], cwd: Path, env: dict[str, str], name: str
          ) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; its wall time (ms) goes to WALL[name], its CPU time to CPU[name]."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)
    WALL.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(name, []).append(
        (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return done


def workspace(env: dict[str, str], files: int) -> Path:
    """A git repository whose demo run waits for the driver (not timed)."""
    root = Path(tempfile.mkdtemp(prefix="rein-bench-"))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    for i in range(files):
        folder = root / "vendor" / f"p{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{i % 100}.py").write_text(f"x = {i}\n")
    shutil.copyfile(DEMO, root / DEMO.name)
    for text in REIN_TOML:
        (root / "rein.toml").write_text(text)
    digest = subprocess.run([REIN, "graph", "digest", DEMO.name], cwd=root, env=env,
                            capture_output=True, text=True, check=True).stdout.strip()
    started = subprocess.run([REIN, "run", DEMO.name, "--approve", digest], cwd=root,
                             env=env, capture_output=True, text=True, check=False)
    assert started.returncode == 3, started.stderr  # waiting for the driver
    return root


def checks_ms(root: Path) -> float:
    """The time the submit's criteria took, as the run's record gives it."""
    from rein import Harness

    with Harness.open(root) as harness:
        run = harness.runs()[0]
        node = next(n for n in harness.nodes(run.run_id) if n.node_key == "write_module")
    results = node.record["attempts"][-1]["success"]["results"]
    assert all(r["passed"] for r in results), results
    return sum(float(r["duration_seconds"]) for r in results) * 1000


ROWS = ("python -c pass", "rein --help", "rein next", "rein submit", "  the checks",
        "  rein's own")


# Run one command in a fresh interpreter, as the console script does, and report how many
# modules it imported (what tests/cli/test_import_budgets.py holds to a budget).
_PROBE = ("import sys; from rein.cli import main; code = main(sys.argv[1:]); "
          "sys.stdout.flush(); print(len(sys.modules), file=sys.stderr); raise SystemExit(code)")
MODULES: dict[str, int] = {}


def count_modules(env: dict[str, str], label: str) -> None:
    """Modules imported by ``rein --help``, ``rein next`` and ``rein submit`` (one turn)."""
    root = workspace(env, 0)
    try:
        def probe(*args: str) -> subprocess.CompletedProcess[str]:
            done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=root, env=env,
                                  capture_output=True, text=True, check=False)
            MODULES[f"{label}{' '.join(('rein',) + args[:1])}"] = int(
                done.stderr.strip().splitlines()[-1])
            return done
        probe("--help")
        done = probe("next", "--json")
        (root / "greet.py").write_text(RIGHT)
        (root / ".rein" / "inbox.json").write_text(json.dumps(json.loads(done.stdout)["example"]))
        done = probe("submit")
        assert done.returncode == 3, done.stderr[-2000:]
    finally:
        shutil.rmtree(root)


# The modules one cold `rein submit` imported, in the order they were first imported.
_LISTED = ("import sys; from rein.cli import main; code = main(sys.argv[1:]); "
           "sys.stdout.flush(); import json; print(json.dumps(list(sys.modules)), "
           "file=sys.stderr); raise SystemExit(code)")
# Import the names given on stdin, one after the other, and print the time it took (ms).
_IMPORT = ("import json, sys, time; names = json.loads(sys.stdin.read()); "
           "from importlib import import_module; t = time.perf_counter()\n"
           "for name in names:\n"
           "    if name not in sys.modules: import_module(name)\n"
           "print((time.perf_counter() - t) * 1000)")
IMPORTS: dict[str, list[float]] = {}


def import_times(env: dict[str, str], label: str, repeat: int) -> None:
    """How long a fresh interpreter takes to import what one cold ``rein submit`` imports
    (its bytecode cached), beside ``asyncio`` alone and what it brings: the share of a
    submit no work of rein's can take away while the engine advances on the event loop."""
    root = workspace(env, 0)
    try:
        done = subprocess.run([REIN, "next", "--json"], cwd=root, env=env, capture_output=True,
                              text=True, check=False)
        (root / "greet.py").write_text(RIGHT)
        (root / ".rein" / "inbox.json").write_text(json.dumps(json.loads(done.stdout)["example"]))
        done = subprocess.run([sys.executable, "-c", _LISTED, "submit"], cwd=root, env=env,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 3, done.stderr[-2000:]
        listed = json.loads(done.stderr.strip().splitlines()[-1])
    finally:
        shutil.rmtree(root)
    groups = {"asyncio and what it brings": ["asyncio"],
              f"the {len(listed)} modules of a submit": listed}
    for _ in range(repeat):
        for name, names in groups.items():
            out = subprocess.run([sys.executable, "-c", _IMPORT], input=json.dumps(names),
                                 env=env, capture_output=True, text=True, check=True).stdout
            IMPORTS.setdefault(label + name, []).append(float(out))


INSTRUCTIONS: dict[str, int] = {}


def callgrind(argv: list[str], cwd: Path, env: dict[str, str]) -> int:
    """The instructions ``argv`` (a Python command) executes, its child processes apart."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)
    found = [line for line in done.stderr.splitlines() if "Collected :" in line]
    assert found, done.stderr[-2000:]
    return int(found[-1].rsplit(":", 1)[1].replace(",", ""))


def count_instructions(env: dict[str, str], label: str) -> None:
    """Instructions of ``python -c pass``, ``rein next`` and ``rein submit`` (one turn)."""
    root = workspace(env, 0)
    try:
        INSTRUCTIONS[f"{label}python -c pass"] = callgrind([sys.executable, "-c", "pass"],
                                                          root, env)
        INSTRUCTIONS[f"{label}rein next"] = callgrind([sys.executable, REIN, "next", "--json"],
                                                     root, env)
        done = subprocess.run([REIN, "next", "--json"], cwd=root, env=env, capture_output=True,
                              text=True, check=False)
        (root / "greet.py").write_text(RIGHT)
        (root / ".rein" / "inbox.json").write_text(json.dumps(json.loads(done.stdout)["example"]))
        INSTRUCTIONS[f"{label}rein submit"] = callgrind([sys.executable, REIN, "submit"],
                                                       root, env)
        after = json.loads(subprocess.run([REIN, "next", "--json"], cwd=root, env=env,
                                          capture_output=True, text=True, check=False).stdout)
        assert after.get("for") == "approval", after  # accepted, and the run is at the gate
    finally:
        shutil.rmtree(root)


def turn(env: dict[str, str], timing: bool, files: int, label: str = "") -> None:
    """One driver turn in a fresh workspace: next, the work, submit; its times go to the
    rows named ``label`` + ROWS."""
    root = workspace(env, files)
    names = tuple(label + n for n in ROWS) if timing else ("warm-up",) * 6
    try:
        timed([sys.executable, "-c", "pass"], root, env, names[0])
        helped = timed([REIN, "--help"], root, env, names[1])
        assert helped.returncode == 0, helped.stderr
        done = timed([REIN, "next", "--json"], root, env, names[2])
        assert done.returncode == 0 and '"instruction"' in done.stdout, done.stderr
        (root / "greet.py").write_text(RIGHT)
        (root / ".rein" / "inbox.json").write_text(json.dumps(json.loads(done.stdout)["example"]))
        done = timed([REIN, "submit"], root, env, names[3])
        assert done.returncode == 3 and "review waiting" in done.stderr, done.stderr  # the gate
        if timing:
            checks = checks_ms(root)
            WALL.setdefault(names[4], []).append(checks)
            WALL.setdefault(names[5], []).append(WALL[names[3]][-1] - checks)
    finally:
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--files", type=int, default=0,
                        help="small files to add to the workspace (a large tree)")
    parser.add_argument("--before", metavar="SRC", default=None,
                        help="the src/ folder of another rein (say, a checkout of the main "
                             "branch): its turns are timed too, interleaved with these")
    parser.add_argument("--rein-toml", nargs="?", const="", default=None, metavar="FILE",
                        help="put a rein.toml in each workspace: FILE, or without one a "
                             "project's file that leaves `rein next`'s answer alone")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each command's CPU instructions (needs valgrind)")
    parser.add_argument("--imports", action="store_true",
                        help="also time importing what a cold submit imports, and asyncio "
                             "alone, in fresh interpreters")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="leave PYTHONDONTWRITEBYTECODE as it is (compile every module)")
    args = parser.parse_args()
    env = dict(os.environ)
    if not args.no_bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    cache = "off" if env.get("PYTHONDONTWRITEBYTECODE") else "on"
    if args.rein_toml is not None:
        REIN_TOML.append(Path(args.rein_toml).read_text() if args.rein_toml else PROJECT_TOML)
    load_before = os.getloadavg()[0]
    labels = [""]
    envs = {"": env}
    if args.before:
        envs["before: "] = {**env, "PYTHONPATH": os.pathsep.join(
            [str(Path(args.before).resolve()), *filter(None, [env.get("PYTHONPATH")])])}
        labels = ["before: ", ""]
    for label in labels:  # writes the bytecode cache; not counted
        turn(envs[label], timing=False, files=0, label=label)
    for _ in range(args.repeat):
        for label in labels:  # interleaved: all see the same load
            turn(envs[label], timing=True, files=args.files, label=label)
    for label in labels:
        count_modules(envs[label], label)
        if args.instructions:
            count_instructions(envs[label], label)
        if args.imports:
            import_times(envs[label], label, args.repeat)
    floor = statistics.median(WALL["python -c pass"])
    print(f"driver turn, n={args.repeat}, {args.files} extra files, bytecode cache {cache}, "
          f"load average "
          f"{load_before:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if REIN_TOML:
        print(f"every workspace has a rein.toml: {args.rein_toml or 'a project file'} "
              f"({len(REIN_TOML[0].splitlines())} lines)")
    cpu_floor = statistics.median(CPU["python -c pass"])
    print(f"{'':<24}{'min ms':>9}{'median':>9}{'max':>9}{'x python':>10}"
          f"{'cpu min':>9}{'median':>9}{'max':>9}{'x python':>10}")
    for name in [label + row for row in ROWS for label in labels]:
        values = WALL[name]
        med = statistics.median(values)
        cpu = ""
        if name in CPU:
            c = CPU[name]
            cpu = (f"{min(c):>9.1f}{statistics.median(c):>9.1f}{max(c):>9.1f}"
                   f"{statistics.median(c) / cpu_floor:>10.1f}")
        print(f"{name:<24}{min(values):>9.1f}{med:>9.1f}{max(values):>9.1f}"
              f"{med / floor:>10.1f}{cpu}")
    print("modules imported: " + ", ".join(f"{k} {v}" for k, v in MODULES.items()))
    if IMPORTS:
        print("imports alone, in a fresh interpreter, min / median / max ms: " + ", ".join(
            f"{k} {min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}"
            for k, v in IMPORTS.items()))
    if INSTRUCTIONS:
        print("instructions (callgrind, millions; x its python -c pass): " + ", ".join(
            f"{k} {v / 1e6:.1f} ({x_python(k, v):.2f}x)" for k, v in INSTRUCTIONS.items()))


def x_python(name: str, count: int) -> float:
    """``count`` over the instructions of ``python -c pass`` measured with the same
    label (``before: `` or none)."""
    label = name[:-len(name.split(": ")[-1])] if ": " in name else ""
    return count / INSTRUCTIONS[f"{label}python -c pass"]


if __name__ == "__main__":
    main()
