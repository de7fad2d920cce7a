"""Real rein processes for the durability tests: start, kill, resume, compare records."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

RERUN_MARKS = ("x-rein-rerun", "x-rein-interrupted")
# Values that differ between two runs of the same graph by design.
VOLATILE = ("run_id", "started_at", "finished_at", "at", "evaluated_at", "duration_seconds",
            "x-rein-duration-seconds", "wall_clock_seconds", "x-rein-approval",
            "session")  # a web session's id, in how an approval was given


def rein_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from rein.cli import main; sys.exit(main())",
            *args]


def env_for(workspace: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
    env["REIN_ALLOW_MODEL_REQUESTS"] = "0"
    env["REIN_SCRIPTED_ANSWERS"] = str(workspace / "answers.yaml")
    env.update(extra or {})
    return env


def rein(workspace: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run one rein command to its end in ``workspace``."""
    return subprocess.run(rein_argv(*args), cwd=workspace, env=env_for(workspace),
                          capture_output=True, text=True, timeout=timeout, check=False)


def start(workspace: Path, *args: str) -> subprocess.Popen[str]:
    """Start a rein command without waiting for it."""
    return subprocess.Popen(rein_argv(*args), cwd=workspace, env=env_for(workspace),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def write_graph(workspace: Path, graph: dict[str, Any], answers: dict[str, Any]) -> str:
    """The graph and the scripted worker's answers; returns the digest to approve."""
    (workspace / "g.agraph.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
    (workspace / "answers.yaml").write_text(yaml.safe_dump(answers, sort_keys=False))
    from rein.formats.canonical import ags_digest

    return ags_digest(graph)


def event_count(workspace: Path) -> int:
    """Events in the workspace's store so far (0 before it exists)."""
    db = workspace / ".rein" / "rein.db"
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0  # created but not yet migrated


def wait_for(predicate: Any, *, timeout: float = 30.0) -> bool:
    """Poll ``predicate`` until true (a condition on another process's progress)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.002)
    return False


def runs(workspace: Path) -> list[dict[str, Any]]:
    """Top-level runs of the workspace, newest first (read in this process: faster)."""
    from rein.store.sqlite import SQLiteStore

    store = SQLiteStore.open(workspace, create=False)
    assert store is not None, "no store"
    try:
        return [{"run_id": r.run_id, "status": r.status.value} for r in store.list_runs()]
    finally:
        store.close()


def record(workspace: Path, run_id: str) -> dict[str, Any]:
    """The run record, as ``rein runs record`` prints it."""
    from rein.engine.run.record import build_record
    from rein.store.sqlite import SQLiteStore

    store = SQLiteStore.open(workspace, create=False)
    assert store is not None, "no store"
    try:
        return json.loads(json.dumps(build_record(store, run_id)))
    finally:
        store.close()


def finished_counts(workspace: Path, run_id: str) -> dict[str, int]:
    """How many times each node of a run finished (a completed node re-run finishes twice)."""
    from rein.core.ids import RunId
    from rein.store.sqlite import SQLiteStore

    store = SQLiteStore.open(workspace, create=False)
    assert store is not None, "no store"
    try:
        counts: dict[str, int] = {}
        for event in store.events(RunId(run_id)):
            if event.type == "node/finished":
                key = str(event.payload.get("node"))
                counts[key] = counts.get(key, 0) + 1
        return counts
    finally:
        store.close()


def normalized(value: Any) -> Any:
    """A run record without ids, timestamps, durations and the re-run marks."""
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()
                if k not in VOLATILE and k not in RERUN_MARKS and not k.startswith("apv-")}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, str) and value.startswith(("run-", "apv-", "drv-")):
        return "<id>"
    return value


def reruns(value: Any) -> int:
    """How many attempts in a record carry the re-run mark."""
    if isinstance(value, dict):
        return int(bool(value.get("x-rein-rerun"))) + sum(reruns(v) for v in value.values())
    if isinstance(value, list):
        return sum(reruns(v) for v in value)
    return 0
