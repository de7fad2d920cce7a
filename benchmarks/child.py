"""Measure a child process on its own: wall time, CPU time and peak memory, none of ours.

``wait4`` on a child we start ourselves reports a peak resident size that counts our own:
the child is forked (or vforked) from this process, and Linux keeps the largest size the
process ever had, the copy of our memory before ``exec`` included. A benchmark that holds a
generated 10,000-node graph in memory saw its own size reported as rein's.

So the child is started through a reaper: a fresh, small interpreter (started with nothing
of ours but its arguments) that forks the command, waits for it with ``wait4`` and writes
what it measured to a file. The command's peak is then its own, or the reaper's few
megabytes if that is larger; never this process's size.

Used by ``engine.py`` and ``checks.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# The reaper: fork, exec the command (stdin closed, stdout and stderr to the given files),
# wait4, write {"wall", "cpu", "peak_kb", "status"} as JSON.
REAPER = """
import json, os, sys, time
report, out, err, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    fd_in = os.open(os.devnull, os.O_RDONLY)
    fd_out = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    fd_err = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd_in, 0); os.dup2(fd_out, 1); os.dup2(fd_err, 2)
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(report, "w") as f:
    json.dump({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
               "peak_kb": usage.ru_maxrss, "status": status}, f)
"""


@dataclass(frozen=True, kw_only=True, slots=True)
class Measured:
    """One run of a command, measured by the reaper."""

    wall: float  # seconds, from fork to the end of wait4
    cpu: float  # seconds of the command's user + system time
    peak_mb: float  # the command's own peak resident size
    code: int
    stdout: str
    stderr: str


def measure(argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> Measured:
    """Run ``argv`` in ``cwd`` with ``env`` through the reaper and return what it measured."""
    with tempfile.TemporaryDirectory(prefix="rein-bench-child-") as tmp:
        report, out, err = (Path(tmp) / name for name in ("report", "stdout", "stderr"))
        subprocess.run([sys.executable, "-S", "-c", REAPER, str(report), str(out), str(err),
                        *argv], cwd=cwd, env=env, check=True, stdin=subprocess.DEVNULL)
        got = json.loads(report.read_text())
        return Measured(wall=got["wall"], cpu=got["cpu"], peak_mb=got["peak_kb"] / 1024,
                        code=os.waitstatus_to_exitcode(got["status"]),
                        stdout=out.read_text(encoding="utf-8", errors="replace"),
                        stderr=err.read_text(encoding="utf-8", errors="replace"))
