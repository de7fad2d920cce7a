"""Counting for ``scale_out.py``: CPU time per process and SQL statements per process.

A worker process is started through :data:`LAUNCH`, which counts every statement its
psycopg connections send (DBOS's, through SQLAlchemy, and rein's own) and writes the count
to a file when it gets ``SIGUSR1``; the benchmark reads it before and after a run. The
coordinator runs in the benchmark's process and counts the same way (:func:`count_here`).
CPU time is read from ``/proc/PID/stat`` (user + system); PostgreSQL's is the server's
processes' own plus what its exited backends left in the postmaster's children totals.

With ``REIN_BENCH_PROFILE=PATH`` a worker started through :data:`LAUNCH` also profiles every
one of its threads with cProfile (:class:`ThreadProfiles`), and each ``SIGUSR1`` writes what
they gathered since the one before to ``PATH.<n>.prof`` (``python -m pstats`` reads it):
the second file of a run is the run itself. ``scale_out.py --profile DIR`` does that for
every process it starts and the coordinator.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

# Run before a worker: counts statements, answers SIGUSR1 with the count.
_COUNTING = """
import json, os, signal, sys
import psycopg
COUNTS = {"statements": 0, "commits": 0, "seq": 0}
def _wrap(cls, name, key):
    orig = getattr(cls, name)
    def counted(self, *a, **k):
        COUNTS[key] += 1
        return orig(self, *a, **k)
    setattr(cls, name, counted)
_wrap(psycopg.Cursor, "execute", "statements")
_wrap(psycopg.Cursor, "executemany", "statements")
_wrap(psycopg.Connection, "commit", "commits")
_wrap(psycopg.Connection, "rollback", "commits")
PROFILES = None
if os.environ.get("REIN_BENCH_PROFILE"):
    sys.path.insert(0, os.environ["REIN_BENCH_DIR"])
    from scale_probe import ThreadProfiles
    PROFILES = ThreadProfiles()
def _dump(*_):
    COUNTS["seq"] += 1
    path = os.environ["REIN_BENCH_COUNTS"]
    if PROFILES is not None:
        PROFILES.dump(f"{os.environ['REIN_BENCH_PROFILE']}.{COUNTS['seq']}.prof")
    with open(path + ".tmp", "w") as f:
        json.dump(COUNTS, f)
    os.replace(path + ".tmp", path)
signal.signal(signal.SIGUSR1, _dump)
"""

# ``rein worker``, counted.
LAUNCH = _COUNTING + """
from rein.cli import main
sys.exit(main())
"""

# The floor: a bare DBOS worker, counted. Its one workflow does what the scripted worker's
# attempt does (it waits ``delay`` seconds) and answers its input back; one queue, taking
# as many at once as a rein worker does (``concurrency``), polled every ``poll`` seconds;
# rows in DBOS's portable JSON, as rein's are. No rein code runs in it. Arguments: one JSON
# object.
FLOOR = _COUNTING + """
import threading, time
from dbos import DBOS
from dbos._serialization import DBOSPortableJSON
ARGS = json.loads(sys.argv[1])
@DBOS.workflow(name="floor_attempt")
def floor_attempt(payload):
    time.sleep(ARGS["delay"])
    return payload
DBOS(config={"name": "rein-floor", "system_database_url": ARGS["url"],
             "executor_id": ARGS["name"], "application_version": "floor",
             "log_level": "WARNING", "run_admin_server": False,
             "serializer": DBOSPortableJSON,
             "db_engine_kwargs": {"pool_pre_ping": False,
                                  "pool_size": ARGS["concurrency"] + 4, "max_overflow": 0}})
DBOS.listen_queues([ARGS["queue"]])
DBOS.launch()
DBOS.register_queue(ARGS["queue"], worker_concurrency=ARGS["concurrency"],
                    polling_interval_sec=ARGS["poll"], on_conflict="always_update")
print("ready on", ARGS["queue"], flush=True)
threading.Event().wait()
"""

_HERE: dict[str, int] = {"statements": 0, "commits": 0}


class ThreadProfiles:
    """cProfile in every thread of this process: this one now, each new one as it starts,
    in CPU time.

    :meth:`dump` writes what every thread's profile gathered since the last dump (or since
    it started) as one ``pstats`` file, and starts them all afresh. The profiles are read and
    cleared without being stopped: stopping one from another thread would stop this
    thread's instead."""

    def __init__(self) -> None:
        import cProfile
        import threading

        # Each thread's own CPU time, not the wall clock: a thread waiting on a lock or a
        # socket costs nothing.
        self._profiles: list[cProfile.Profile] = []

        def start(*_: Any) -> None:  # the first event of a new thread
            profile = cProfile.Profile(time.thread_time)
            self._profiles.append(profile)
            profile.enable()

        threading.setprofile(start)
        start()
        self._here = self._profiles[0]

    def close(self) -> None:
        """Profile no new thread, nor this one (threads already profiled go on)."""
        import threading

        threading.setprofile(None)  # type: ignore[arg-type]
        self._here.disable()

    def dump(self, path: str) -> None:
        import marshal

        merged: dict[Any, Any] = {}
        for profile in list(self._profiles):
            profile.snapshot_stats()
            profile.clear()
            for func, (cc, nc, tt, ct, callers) in profile.stats.items():  # type: ignore[attr-defined]
                if func not in merged:
                    merged[func] = (cc, nc, tt, ct, dict(callers))
                    continue
                c0, n0, t0, s0, k0 = merged[func]
                for caller, value in callers.items():
                    k0[caller] = _add(k0[caller], value) if caller in k0 else value
                merged[func] = (c0 + cc, n0 + nc, t0 + tt, s0 + ct, k0)
        with open(path, "wb") as f:
            marshal.dump(merged, f)


def _add(a: Any, b: Any) -> Any:
    return tuple(x + y for x, y in zip(a, b, strict=True)) if isinstance(a, tuple) else a + b


def count_here() -> None:
    """Count this process's psycopg statements and commits (the coordinator's)."""
    import psycopg

    if getattr(psycopg.Cursor.execute, "_counted", False):
        return
    for cls, name, key in ((psycopg.Cursor, "execute", "statements"),
                           (psycopg.Cursor, "executemany", "statements"),
                           (psycopg.Connection, "commit", "commits"),
                           (psycopg.Connection, "rollback", "commits")):
        orig = getattr(cls, name)

        def counted(self: Any, *a: Any, _o: Any = orig, _k: str = key, **k: Any) -> Any:
            _HERE[_k] += 1
            return _o(self, *a, **k)

        counted._counted = True  # type: ignore[attr-defined]
        setattr(cls, name, counted)


def here() -> dict[str, int]:
    return dict(_HERE)


def asked(pid: int, path: Path, timeout: float = 10.0) -> dict[str, int]:
    """The counts of a worker started through :data:`LAUNCH` (it writes ``path``)."""
    import json

    seq = json.loads(path.read_text())["seq"] if path.exists() else 0
    os.kill(pid, signal.SIGUSR1)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists():
            got = json.loads(path.read_text())
            if got["seq"] > seq:
                return {k: int(v) for k, v in got.items() if k != "seq"}
        time.sleep(0.01)
    raise SystemExit(f"worker {pid} did not report its counts")


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()  # fields from the third (state) on


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU of ``pid`` (and of its reaped children with ``children``)."""
    f = _stat(pid)
    ticks = int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def self_cpu() -> float:
    t = os.times()
    return t.user + t.system


def postmaster_of(url: str) -> tuple[int | None, str]:
    """The server's main process when it runs on this machine; else ``None`` and why.

    The backend's parent is read while its connection is open: once the connection closes
    the backend exits, and its ``/proc`` entry was gone about one time in twenty."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        if not row:
            return None, "the server did not give its backend's process id"
        try:
            return int(_stat(int(row[0]))[1]), ""
        except OSError as exc:
            return None, (f"its backend process {row[0]} is not visible here ({exc.strerror}): "
                          "the server runs on another machine or in another PID namespace")


def server_cpu(postmaster: int) -> float | None:
    """CPU of the server: the postmaster, its live children, and its reaped ones (``None``
    when the postmaster cannot be read). A child reaped while the live ones are read would
    count in neither sum, or in both: the reading is taken again when the postmaster's
    totals of reaped children moved meanwhile."""
    for _ in range(5):
        try:
            before = _stat(postmaster)
            live = sum(int(f[11]) + int(f[12]) for f in _children(postmaster))
            after = _stat(postmaster)
        except OSError:
            return None
        if before[13:15] == after[13:15]:
            break
    ticks = sum(int(x) for x in after[11:15]) + live
    return ticks / os.sysconf("SC_CLK_TCK")


def _children(parent: int) -> list[list[str]]:
    """The ``/proc`` stat fields of ``parent``'s live children."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            f = _stat(int(entry.name))
        except (OSError, IndexError, ValueError):  # ended since the listing
            continue
        if int(f[1]) == parent:
            out.append(f)
    return out
