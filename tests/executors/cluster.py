"""A small cluster for the scale-out tests: a fresh PostgreSQL database, a git workspace,
``rein worker`` processes and ``rein run``/``rein resume`` coordinators, all real processes.

Every wait here polls a condition in the database, bounded by a deadline; none sleeps to
let something happen.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

PG_ENV = "REIN_TEST_POSTGRES_URL"
REIN = "import sys; from rein.cli import main; sys.exit(main())"
DEADLINE = 240.0  # seconds any one wait may take on a loaded 2-core machine


def postgres_base() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f"{PG_ENV} is not set: start a server with "
                    "`eval \"$(bash scripts/postgres.sh start)\"` (make test does)")
    pytest.importorskip("dbos", reason="the scale extra is not installed: "
                        "pip install 'rein-ags[scale]'")
    return url


def fresh_database(base: str) -> Iterator[str]:
    """A database of its own (DBOS's schema has a fixed name), dropped afterwards."""
    import psycopg

    name = f"rein_scale_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    head, _, query = base.partition("?")
    url = head.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")
    yield url
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def map_graph(items: int, width: int, task: dict[str, Any] | None = None) -> dict[str, Any]:
    """One map node over ``items`` numbers; the body is one task ``w`` (``task``: more of
    its fields, such as ``success`` or ``requirements``)."""
    graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "scale/map",
            "title": "scale-out map", "objective": "run many attempts",
            "requires_conformance": 3, "constraints": {"max_parallel_nodes": width},
            "params": {"xs": {"type": "array", "description": "the items",
                              "default": list(range(items))}},
            "entrypoints": ["fan"],
            "nodes": {"fan": {"type": "map", "title": "fan out", "description": "one per item",
                              "map": {"over": "params.xs", "as": "x", "max_items": items,
                                      "max_parallel": width,
                                      "collect": {"got": "nodes.w.outputs.v"},
                                      "body": {"title": "item", "entrypoints": ["w"], "nodes": {
                                          "w": {"title": "work", "description": "one item",
                                                "outputs": {"v": {"type": "string",
                                                                  "description": "done"}}}}}}}}}
    graph["nodes"]["fan"]["map"]["body"]["nodes"]["w"].update(task or {})
    return graph


@dataclass
class Cluster:
    """A workspace, a store URL (``None``: the embedded SQLite store) and the processes."""

    root: Path
    url: str | None
    delay: float = 0.3
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ws = self.root / "ws"
        self.ws.mkdir(parents=True)
        git = ["git", "-C", str(self.ws), "-c", "user.email=t@example.org", "-c", "user.name=t"]
        subprocess.run([*git[:3], "init", "-q"], check=True)
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
        # The fleet's queue key, where every process here looks for it (XDG_CONFIG_HOME):
        # what a deployment copies to each machine.
        self.key = self.root / "xdg" / "rein" / "queue.key"
        self.key.parent.mkdir(parents=True)
        self.key.write_text(secrets.token_hex(32) + "\n")
        self.key.chmod(0o600)
        self.answers = self.root / "answers.json"
        self.answers.write_text(json.dumps({"nodes": {"w": [
            {"outputs": {"v": "done"}, "delay_seconds": self.delay}]}}))

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
        env.update({"HOME": str(self.root / "home"), "XDG_CONFIG_HOME": str(self.root / "xdg"),
                    "REIN_SCRIPTED_ANSWERS": str(self.answers), **extra})
        return env

    def store_args(self) -> list[str]:
        return ["--store", self.url] if self.url else []

    def rein(self, *args: str, executor: bool = True, wait: bool = True,
             log: str | None = None, where: bool = True, extra: dict[str, str] | None = None,
             ) -> subprocess.Popen[bytes] | subprocess.CompletedProcess[str]:
        place = ["--workspace", str(self.ws), *self.store_args()] if where else []
        argv = [sys.executable, "-c", REIN, *args, *place]
        env = self.env(**({"REIN_EXECUTOR": "dbos"} if executor and self.url else {}),
                       **(extra or {}))
        if wait:
            return subprocess.run(argv, env=env, capture_output=True, text=True,
                                  timeout=DEADLINE, check=False)
        out = open(self.root / (log or "proc.log"), "ab")  # noqa: SIM115 - the process owns it
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def worker(self, name: str, **env: str) -> subprocess.Popen[bytes]:
        proc = self.rein("worker", "--name", name, "--concurrency", "4", wait=False,
                         log=f"{name}.log", extra=env)
        assert isinstance(proc, subprocess.Popen)
        return proc

    def graph(self, items: int = 40, width: int = 8, task: dict[str, Any] | None = None
              ) -> tuple[str, str]:
        path = self.ws / "map.agraph.yaml"
        path.write_text(yaml.safe_dump(map_graph(items, width, task), sort_keys=False))
        done = self.rein("graph", "digest", str(path), executor=False, where=False)
        assert isinstance(done, subprocess.CompletedProcess) and done.returncode == 0, done
        return str(path), done.stdout.strip()

    def record(self, run_id: str) -> dict[str, Any]:
        done = self.rein("runs", "record", run_id, executor=False)
        assert isinstance(done, subprocess.CompletedProcess) and done.returncode == 0, done
        data: dict[str, Any] = json.loads(done.stdout)
        return data

    def node_rows(self, run_id: str) -> dict[str, dict[str, Any]]:
        """Every node of the run as the store holds it (map items included), by key."""
        from rein.store.open import open_store

        store = open_store(self.ws, url=self.url, create=False)
        try:
            return {row.node_key: {"status": row.status.value, "type": row.type,
                                   **dict(row.record)} for row in store.nodes(run_id)}
        finally:
            store.close()

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        import psycopg

        assert self.url is not None
        with psycopg.connect(self.url, autocommit=True) as conn:
            return list(conn.execute(sql, args).fetchall())

    def wait_for(self, what: str, check: Callable[[], bool]) -> None:
        """Poll ``check`` until it holds; fail naming ``what`` at the deadline."""
        end = time.monotonic() + DEADLINE
        while not check():
            gone = [p.args for p in self.procs if p.returncode is None and p.poll() not in
                    (None, -signal.SIGKILL)]
            if gone:
                pytest.fail(f"a process ended while waiting for {what}: {gone}\n{self.logs()}")
            if time.monotonic() > end:
                pytest.fail(f"timed out waiting for {what}; logs:\n{self.logs()}")
            time.sleep(0.1)  # polling interval of a bounded wait, not a synchronisation

    def workers_ready(self, *names: str) -> None:
        def ready() -> bool:
            return all("ready on" in self.log(n) for n in names)
        self.wait_for(f"workers {names} to be ready", ready)

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.root.glob("*.log")))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def claimed_by(cluster: Cluster, executor_id: str) -> int:
    """Attempts ``executor_id`` has claimed and is running right now (mid-attempt)."""
    rows = cluster.query(
        "SELECT count(*) FROM dbos.workflow_status s JOIN rein_attempt_runs r "
        "ON r.workflow_id = s.workflow_uuid WHERE s.executor_id = %s "
        "AND r.executor_id = s.executor_id AND s.status = 'PENDING' "
        "AND s.name = 'rein_attempt'", executor_id)
    return int(rows[0][0])


_VOLATILE = {"run_id", "started_at", "finished_at", "at", "created_at", "updated_at",
             "x-rein-placement", "x-rein-rerun", "duration_ms", "digest"}


def comparable(value: Any) -> Any:
    """A record without ids, times, worker names and the re-run marker."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()
                if k not in _VOLATILE
                and not str(k).endswith(("_at", "_id", "_ms", "seconds"))}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two comparable records differ, as readable paths (for failure messages)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}: only on one side" for k in sorted(set(a) ^ set(b), key=str)]
        for k in sorted(set(a) & set(b), key=str):
            out += differences(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]
