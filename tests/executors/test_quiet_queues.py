"""Fewer statements per attempt on a real server: the coordinator's record writes of
attempts that end together share a commit, it is woken by the end of an attempt instead of
polling, an idle worker sends (almost) nothing, and one owner sets a queue's shared limits.
Bounded by counts of statements, never by time."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from tests.executors.cluster import Cluster, map_graph

pytestmark = pytest.mark.timeout(900)

# A worker that counts its psycopg statements and writes the count when asked (SIGUSR1).
COUNTING = """
import json, os, signal, sys
import psycopg
COUNTS = {"statements": 0, "seq": 0}
orig = psycopg.Cursor.execute
def counted(self, *a, **k):
    COUNTS["statements"] += 1
    return orig(self, *a, **k)
psycopg.Cursor.execute = counted
def dump(*_):
    COUNTS["seq"] += 1
    path = os.environ["COUNTS_FILE"]
    with open(path + ".tmp", "w") as f:
        json.dump(COUNTS, f)
    os.replace(path + ".tmp", path)
signal.signal(signal.SIGUSR1, dump)
from rein.cli import main
sys.exit(main())
"""


class StatementCounter:
    """Counts this process's psycopg statements (a spy on ``Cursor.execute``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        orig = psycopg.Cursor.execute

        def counted(cursor: Any, *a: Any, **k: Any) -> Any:
            self.count += 1
            return orig(cursor, *a, **k)

        monkeypatch.setattr(psycopg.Cursor, "execute", counted)


def counting_worker(c: Cluster, name: str) -> tuple[subprocess.Popen[bytes], Path]:
    counts = c.root / f"{name}.counts"
    argv = [sys.executable, "-c", COUNTING, "worker", "--name", name, "--concurrency", "4",
            "--workspace", str(c.ws), "--store", str(c.url)]
    log = open(c.root / f"{name}.log", "ab")  # noqa: SIM115 - the process owns it
    proc = subprocess.Popen(argv, env={**c.env(), "COUNTS_FILE": str(counts)}, stdout=log,
                            stderr=subprocess.STDOUT)
    c.procs.append(proc)
    return proc, counts


def statements_of(c: Cluster, proc: subprocess.Popen[bytes], counts: Path) -> int:
    seq = json.loads(counts.read_text())["seq"] if counts.exists() else 0
    proc.send_signal(__import__("signal").SIGUSR1)
    c.wait_for("the worker's counts", lambda: counts.exists()
               and json.loads(counts.read_text())["seq"] > seq)
    return int(json.loads(counts.read_text())["statements"])


def beats(c: Cluster, name: str, n: int) -> None:
    (mark,) = c.query("SELECT beat_at FROM rein_executors WHERE executor_id = %s", name)
    c.wait_for(f"{n} heartbeats of {name}", lambda: bool(c.query(
        "SELECT 1 FROM rein_executors WHERE executor_id = %s "
        f"AND beat_at >= %s + interval '{n} seconds'", name, mark[0])))


def test_an_idle_worker_sends_few_statements(tmp_path: Path, db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url)

    def clock() -> float:
        return float(c.query("SELECT extract(epoch FROM clock_timestamp())")[0][0])

    try:
        proc, counts = counting_worker(c, "w1")
        c.workers_ready("w1")
        beats(c, "w1", 1)
        t0, before = clock(), statements_of(c, proc, counts)
        beats(c, "w1", 4)
        after, t1 = statements_of(c, proc, counts), clock()
    finally:
        c.stop()
    # A wake every 20 ms on three queues: 150 wakes a second, three statements each when
    # every wake claims. Quiet, a second costs the heartbeat and supervision (2), DBOS's
    # own upkeep (its queue table, schedules, delayed and deduplicated workflows: 5), and
    # a fallback claim (2) per queue, DBOS's internal one included (4).
    assert after - before <= 16 * (t1 - t0) + 10, (after - before, t1 - t0)


def test_the_trigger_notifies_enqueued_and_ended_attempts(tmp_path: Path, db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    try:
        c.worker("w1")
        c.workers_ready("w1")
        with psycopg.connect(db_url, autocommit=True) as listen:
            listen.execute("LISTEN rein_enqueued")
            listen.execute("LISTEN rein_done")
            path, digest = c.graph(items=2, width=2)
            done = c.rein("run", path, "--approve", digest, "--json")
            assert isinstance(done, subprocess.CompletedProcess) and done.returncode == 0, done
            heard = [(n.channel, n.payload) for n in listen.notifies(timeout=2, stop_after=99)]
        ended = c.query("SELECT workflow_uuid, queue_name FROM dbos.workflow_status "
                        "WHERE name = 'rein_attempt'")
    finally:
        c.stop()
    assert len(ended) == 2
    assert {p for ch, p in heard if ch == "rein_done"} == {str(w) for w, _ in ended}
    assert {p for ch, p in heard if ch == "rein_enqueued"} == {str(q) for _, q in ended}


def test_the_coordinator_sends_at_most_eleven_statements_per_attempt(
        tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.engine.run.runner import Engine, prepare
    from rein.store.postgres import PostgresStore
    from rein.workers.scripted import ScriptedWorker

    items = 32
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    store = None
    try:
        c.worker("w1")
        c.workers_ready("w1")
        graph = c.ws / "map.agraph.yaml"
        store = PostgresStore(db_url)
        worker = ScriptedWorker({"nodes": {"w": [{"outputs": {"v": "done"}}]}})
        engine = Engine(workspace=c.ws, store=store, workers=(worker,),
                        env={"REIN_EXECUTOR": "dbos", "REIN_QUEUE_KEY_FILE": str(c.key)})
        outcomes, sent = [], []
        for n in (4, items):  # the first run sets up the store's tables and the connections
            graph.write_text(yaml.safe_dump(map_graph(n, 8), sort_keys=False))
            prepared = prepare(graph, given={}, env={})
            counter = StatementCounter(monkeypatch)
            outcomes.append(asyncio.run(engine.start(prepared, approved=prepared.digest)))
            sent.append(counter.count)
            monkeypatch.undo()
    finally:
        if store is not None:
            store.close()
        c.stop()
    assert [o.status.value for o in outcomes] == ["succeeded", "succeeded"]
    # Per attempt: its enqueue (two statements) and shares of a status read and of the
    # commits its records join; a run's own start and end cost some twenty more. How many
    # attempts share a commit depends on how many end together: fewer when they end in
    # groups, more when each ends alone. Before the commits were shared it was 22 an
    # attempt (benchmarks/scale_out.py prints today's per-attempt figures).
    assert sent[1] <= 11 * items + 20, sent


def test_one_owner_sets_a_queue_s_shared_limits(tmp_path: Path, db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url)
    toml = c.ws / "rein.toml"
    try:
        toml.write_text("[executor]\nglobal_concurrency = 8\n")
        w1 = c.worker("w1")
        c.workers_ready("w1")
        toml.write_text("[executor]\nglobal_concurrency = 6\n")
        c.worker("w2")
        c.workers_ready("w2")
        rows = c.query("SELECT name, concurrency FROM dbos.queues WHERE name LIKE 'rein%%' "
                       "AND name NOT LIKE '%%#%%'")
        w2_says = c.log("w2")
        w1.terminate()
        w1.wait(timeout=60)
        c.procs.remove(w1)
        c.stop()
        c.procs.clear()
        # Every worker of the queue stopped: the next one's settings are the queue's.
        toml.write_text("[executor]\nglobal_concurrency = 4\n")
        c.worker("w3")
        c.workers_ready("w3")
        later = c.query("SELECT name, concurrency FROM dbos.queues WHERE name LIKE 'rein%%' "
                        "AND name NOT LIKE '%%#%%'")
    finally:
        c.stop()
    assert rows and all(n == 8 for _, n in rows), rows
    assert "SCALE008" in w2_says and "global_concurrency 8" in w2_says, w2_says
    assert "SCALE008" not in c.log("w1")
    assert later and all(n == 4 for _, n in later), later
    assert "SCALE008" not in c.log("w3")

