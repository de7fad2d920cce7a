"""The warm server of a benchmark's own (``rein driver warm``): started as a first turn
starts it, in a runtime folder of the benchmark's, and the CPU time of the turns it forks.

A warm turn runs in a child of the server, not of the benchmark, so the benchmark's own
``RUSAGE_CHILDREN`` sees only the client: :func:`turn_cpu_ms` adds what the server's reaped
children spent (``/proc/PID/stat``'s cutime and cstime, in clock ticks: 10 ms steps).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REIN = str(Path(sys.executable).parent / "rein")


class WarmServer:
    """A warm server for ``env`` (with ``REIN_WARM=on`` and a runtime folder of its own)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = {**env, "REIN_WARM": "on",
                    "XDG_RUNTIME_DIR": tempfile.mkdtemp(prefix="rein-bench-run-")}
        self.pid = 0

    def start(self, cwd: Path) -> None:
        """A first turn starts it; wait (not timed) until it listens."""
        subprocess.run([REIN, "next"], cwd=cwd, env=self.env, capture_output=True, check=False)
        for _ in range(1200):
            shown = json.loads(subprocess.run([REIN, "driver", "warm", "--json"], cwd=cwd,
                                              env=self.env, capture_output=True, text=True,
                                              check=True).stdout)
            if shown["running"]:
                self.pid = int(shown["pid"])
                return
            time.sleep(0.05)
        raise SystemExit("the warm server did not start")

    def ticks(self) -> int:
        """The clock ticks its reaped children (the turns) spent, user and system."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[13]) + int(fields[14])

    def turn_cpu_ms(self, since: int) -> float:
        """The CPU ms of the turns it ran since :meth:`ticks` said ``since``."""
        return (self.ticks() - since) * 1000 / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        subprocess.run([REIN, "driver", "warm", "stop"], env=self.env, capture_output=True,
                       check=False)
