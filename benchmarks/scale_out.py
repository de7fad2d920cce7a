"""Scale-out: the 200 x 50 ms map in process, and through DBOS with 1, 2 and 4 workers.

The graph is ``map_parallel.py``'s: one map node over 200 items, body one task served by the
scripted worker with ``delay_seconds: 0.05``. The reference is the same run in process on
SQLite, width 16. Through DBOS, the coordinator runs in this process on a PostgreSQL store
(``REIN_TEST_POSTGRES_URL``, or a throwaway server from ``scripts/postgres.sh``) with
``REIN_EXECUTOR=dbos``, and N ``rein worker`` processes take the attempts, each running at
most ``--per-worker`` at once (4), so the ideal time falls as workers are added:
200 / (4 N) x 50 ms. There the queue, not the graph, bounds how many attempts run, so the
map's ``max_parallel`` is twice the workers' slots (at least 16): the coordinator keeps the
next attempts queued while the running ones finish. Workers are started and ready before
the clock starts; each configuration gets a fresh database.

*Overhead per attempt* is what an attempt costs beyond its 50 ms of work at the concurrency
the configuration allows: ``wall x concurrency / items - 50 ms``.

The second table is what an attempt costs the machine, whatever its load: the CPU time
(user + system) the coordinator, the workers together and the PostgreSQL server spent
during the run, divided by the items, beside the in-process run's own CPU time per item
(the reference: the goal is at most 1.5 times it), and the SQL statements (and commits) the coordinator
and the workers sent per item, idle polling included (``scale_probe.py``). On a shared
machine these move far less than the wall time. The server's CPU is read from ``/proc``;
where it cannot be (a server on another machine), its column and the total say ``n/a`` and
a line under the table says why.

Run: .venv/bin/python benchmarks/scale_out.py [--repeat 3] [--items 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_probe as probe
from map_parallel import DELAY, mapped

from rein.engine.run.runner import Engine, prepare
from rein.workers.scripted import ScriptedWorker

WIDTH = 16
Costs = dict[str, float]


def server() -> str:
    url = os.environ.get("REIN_TEST_POSTGRES_URL")
    if url:
        return url
    out = subprocess.run(["bash", "scripts/postgres.sh", "start"], capture_output=True,
                         text=True, check=False).stdout
    for line in out.splitlines():
        if "REIN_TEST_POSTGRES_URL=" in line:
            return line.split("=", 1)[1].strip("'")
    raise SystemExit("no PostgreSQL server: see scripts/postgres.sh")


def database(base: str) -> str:
    import psycopg

    name = f"rein_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    head, _, query = base.partition("?")
    return head.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")


def once(ws: Path, items: int, store: object, env: dict[str, str], width: int = WIDTH
         ) -> float:
    graph = ws / "map.agraph.yaml"
    graph.write_text(yaml.safe_dump(mapped(items, width), sort_keys=False))
    worker = ScriptedWorker({"nodes": {"w": [{"outputs": {}, "delay_seconds": DELAY}]}})
    engine = Engine(workspace=ws, store=store, workers=(worker,), env=env)  # type: ignore[arg-type]
    prepared = prepare(graph, given={}, env={})
    t0 = time.perf_counter()
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    wall = time.perf_counter() - t0
    if outcome.status.value != "succeeded":
        raise SystemExit(f"the map run ended {outcome.status.value}")
    return wall


def in_process(items: int) -> tuple[float, float]:
    """The run's wall time and its CPU time per item (this process: the whole run)."""
    from rein.store.sqlite import SQLiteStore

    with tempfile.TemporaryDirectory(prefix="rein-scale-") as tmp:
        store = SQLiteStore.open(Path(tmp))
        assert store is not None  # created here
        try:
            profiled = _profiled("in-process")
            if profiled is not None:
                PROFILE["here"].dump(os.devnull)
            cpu = probe.self_cpu()
            wall = once(Path(tmp), items, store, {})
            cpu = probe.self_cpu() - cpu
            if profiled is not None:
                PROFILE["here"].dump(f"{profiled}.prof")
            return wall, cpu / items
        finally:
            store.close()


PROFILE: dict[str, Any] = {"dir": None, "runs": 0, "here": None}
BENCH_DIR = str(Path(__file__).resolve().parent)


def through_dbos(base: str, items: int, workers: int, per_worker: int, width: int = WIDTH
                 ) -> tuple[float, Costs, str]:
    """The run's wall time, its costs per item, and why the server's CPU could not be read
    (``server_cpu`` is then NaN; empty when it was)."""
    from rein.store.postgres import PostgresStore

    def start(url: str, tmp: Path) -> tuple[dict[str, str], Any]:
        ws, answers = tmp / "ws", tmp / "answers.json"
        ws.mkdir()
        answers.write_text(json.dumps({"nodes": {"w": [{"outputs": {},
                                                        "delay_seconds": DELAY}]}}))
        key = tmp / "queue.key"  # the fleet's queue key, shared by every process
        key.write_text(secrets.token_hex(32))
        key.chmod(0o600)
        env = {"REIN_SCRIPTED_ANSWERS": str(answers), "HOME": str(tmp),
               "REIN_QUEUE_KEY_FILE": str(key)}

        def argv(n: int) -> list[str]:
            return [sys.executable, "-c", probe.LAUNCH, "worker", "--store", url,
                    "--workspace", str(ws), "--name", f"w{n}", "--concurrency",
                    str(per_worker)]

        def run() -> float:
            store = PostgresStore(url)
            try:
                return once(ws, items, store, {"REIN_EXECUTOR": "dbos",
                                               "REIN_QUEUE_KEY_FILE": str(key)}, width)
            finally:
                store.close()

        return env, (argv, run)

    return _fleet(base, items, workers, f"dbos{workers}", start)


FLOOR_QUEUE = "floor"


def floor(base: str, items: int, workers: int, per_worker: int, width: int = WIDTH
          ) -> tuple[float, Costs, str]:
    """DBOS alone, as :func:`through_dbos` measures rein: ``items`` workflows that each
    wait 50 ms, on one queue, run by ``workers`` bare DBOS processes (``probe.FLOOR``) taking
    as many at once as a rein worker does (``per_worker``, as many again prefetched) and
    polling every 50 ms. This process is the client: it keeps ``width`` workflows in
    flight, each enqueued in its own transaction as rein enqueues an attempt, and reads
    which of them ended in one status query every 50 ms. Its own CPU and statements are
    the coordinator's columns."""

    def start(url: str, tmp: Path) -> tuple[dict[str, str], Any]:
        def argv(n: int) -> list[str]:
            return [sys.executable, "-c", probe.FLOOR, json.dumps({
                "url": url, "name": f"f{n}", "queue": FLOOR_QUEUE, "delay": DELAY,
                "concurrency": 2 * per_worker, "poll": DELAY})]

        return {}, (argv, lambda: _floor_client(url, items, width))

    return _fleet(base, items, workers, f"floor{workers}", start)


def _floor_client(url: str, items: int, width: int) -> float:
    import sqlalchemy as sa
    from dbos import DBOSClient
    from dbos._serialization import DBOSPortableJSON

    t0 = time.perf_counter()
    engine = sa.create_engine(sa.make_url(url).set(drivername="postgresql+psycopg"),
                              pool_pre_ping=False, pool_size=8, max_overflow=0)
    client = DBOSClient(system_database_engine=engine, application_name="rein-floor",
                        serializer=DBOSPortableJSON)
    done_states = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]
    waiting: set[str] = set()
    sent = ended = 0
    try:
        while ended < items:
            while sent < items and len(waiting) < width:
                workflow_id = f"floor-{sent}"
                client.enqueue({"queue_name": FLOOR_QUEUE, "workflow_name": "floor_attempt",
                                "workflow_id": workflow_id, "app_version": "floor"}, sent)
                waiting.add(workflow_id)
                sent += 1
            time.sleep(DELAY)
            rows = client.list_workflows(workflow_ids=sorted(waiting), status=done_states,
                                         load_input=False)
            for row in rows:
                if row.status != "SUCCESS":
                    raise SystemExit(f"floor workflow {row.workflow_id} ended {row.status}")
                waiting.discard(row.workflow_id)
                ended += 1
    finally:
        client.destroy()
        engine.dispose()
    return time.perf_counter() - t0


def _fleet(base: str, items: int, workers: int, name: str,
           start: Callable[[str, Path], tuple[dict[str, str], Any]]
           ) -> tuple[float, Costs, str]:
    """Start ``workers`` worker processes (``start`` gives their environment, their command
    line by number, and the run), wait until they are ready, and measure the run."""
    url = database(base)
    with tempfile.TemporaryDirectory(prefix="rein-scale-") as tmp:
        extra, (argv, run) = start(url, Path(tmp))
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("REIN_")},
               "HOME": tmp, **extra}
        procs = []
        profiled = _profiled(name)
        for n in range(workers):
            log = open(Path(tmp) / f"w{n}.log", "w")  # noqa: SIM115 - the process owns it
            procs.append(subprocess.Popen(
                argv(n),
                env={**env, "REIN_BENCH_COUNTS": str(Path(tmp) / f"w{n}.counts"),
                     **({} if profiled is None else {
                         "REIN_BENCH_PROFILE": f"{profiled}-w{n}",
                         "REIN_BENCH_DIR": BENCH_DIR})},
                stdout=log, stderr=subprocess.STDOUT))
        try:
            while not all("ready on" in (Path(tmp) / f"w{n}.log").read_text()
                          for n in range(workers)):
                if any(p.poll() is not None for p in procs):
                    raise SystemExit((Path(tmp) / "w0.log").read_text())
                time.sleep(0.2)
            counts = [Path(tmp) / f"w{n}.counts" for n in range(workers)]
            postmaster, unread = probe.postmaster_of(url)
            before = _costs(procs, counts, postmaster)
            if profiled is not None:
                PROFILE["here"].dump(os.devnull)  # what came before the run: dropped
            wall = run()
            after = _costs(procs, counts, postmaster)
            if profiled is not None:
                PROFILE["here"].dump(f"{profiled}-coordinator.prof")
            per_item = {k: (after[k] - before[k]) / items for k in after}
            if postmaster is not None and math.isnan(per_item["server_cpu"]):
                unread = f"its main process {postmaster} could not be read during the run"
            return wall, per_item, unread
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=60)
            drop(base, url)


def _profiled(name: str) -> str | None:
    """Where this run's profiles go (``--profile``), or ``None``."""
    if PROFILE["dir"] is None:
        return None
    PROFILE["runs"] += 1
    return str(Path(PROFILE["dir"]) / f"{name}-run{PROFILE['runs']}")


def _costs(procs: list[subprocess.Popen[bytes]], counts: list[Path], postmaster: int | None
           ) -> Costs:
    """Running totals: CPU seconds by role, statements and commits by side."""
    got = [probe.asked(p.pid, c) for p, c in zip(procs, counts, strict=True)]
    pg = None if postmaster is None else probe.server_cpu(postmaster)
    mine = probe.here()
    return {"coordinator_cpu": probe.self_cpu(),
            "workers_cpu": sum(probe.cpu_seconds(p.pid) for p in procs),
            "server_cpu": float("nan") if pg is None else pg,
            "coordinator_sql": mine["statements"], "coordinator_commits": mine["commits"],
            "workers_sql": sum(g["statements"] for g in got),
            "workers_commits": sum(g["commits"] for g in got)}


def drop(base: str, url: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {url.partition('?')[0].rsplit('/', 1)[1]} "
                      "WITH (FORCE)")


def _cpu_table(local_cpu: list[float], costs: list[tuple[str, int, list[Costs]]]) -> None:
    """CPU ms per attempt over every process (min / median / max of the runs' totals), by
    process (medians), and statements by side (means); rein's rows also over the floor's."""
    print("CPU ms per attempt, user + system: the total over every process (min / median / "
          "max of the runs), by process (medians); x in-process: medians over the "
          "in-process median; over floor: the median total less the floor's (same workers);"
          " SQL statements (commits) per attempt by side, means")
    print(f"{'configuration':24} {'min':>6} {'median':>6} {'max':>6} {'coord':>6} "
          f"{'workers':>7} {'server':>6} {'x in-process':>12} {'over floor':>10} "
          f"{'x in-process':>12} {'coord sql':>12} {'workers sql':>12}")
    local = statistics.median(local_cpu)
    print(f"{'in process (reference)':24} {min(local_cpu):6.2f} {local:6.2f} "
          f"{max(local_cpu):6.2f} {local:6.2f} {'':>7} {'':>6} {1.0:12.2f}")
    floors: dict[int, float] = {}
    for name, workers, done in costs:
        ms = {k: [r[k] * 1000 for r in done] for k in ("coordinator_cpu", "workers_cpu",
                                                       "server_cpu")}
        totals = [sum(parts) for parts in zip(*ms.values(), strict=True)]
        sql = {k: statistics.fmean(r[k] for r in done) for k in done[0] if "_sql" in k
               or "_commits" in k}
        by = [f"{statistics.median(ms[k]):{w}.2f}" for k, w in (
            ("coordinator_cpu", 6), ("workers_cpu", 7))]
        if any(math.isnan(t) for t in totals):  # the server's CPU could not be read
            spread, server, times, over = f"{'n/a':>6} " * 3, f"{'n/a':>6}", "n/a", ""
        else:
            med = statistics.median(totals)
            spread = f"{min(totals):6.2f} {med:6.2f} {max(totals):6.2f} "
            server = f"{statistics.median(ms['server_cpu']):6.2f}"
            times = f"{med / local:.2f}"
            if name.startswith("dbos floor"):
                floors[workers], over = med, ""
            elif workers in floors:
                extra = med - floors[workers]
                over = f"{extra:10.2f} {extra / local:12.2f}"
            else:
                over = ""
        print(f"{name:24} {spread}{by[0]} {by[1]} {server} {times:>12} {over:>23} "
              f"{sql['coordinator_sql']:5.1f} ({sql['coordinator_commits']:4.1f}) "
              f"{sql['workers_sql']:5.1f} ({sql['workers_commits']:4.1f})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--per-worker", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4],
                        help="the worker counts to run (default: 1 2 4)")
    parser.add_argument("--no-floor", action="store_true",
                        help="leave out the floor: the same workflows run by DBOS alone")
    parser.add_argument("--profile", metavar="DIR",
                        help="profile every thread of the coordinator and the workers with "
                             "cProfile and write the runs' profiles to DIR (costs CPU: the "
                             "figures printed are then not comparable)")
    args = parser.parse_args(argv)
    import rein.executors.dbos  # noqa: F401 - its import (seconds) is not measured

    probe.count_here()
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
        PROFILE["dir"], PROFILE["here"] = args.profile, probe.ThreadProfiles()

    base = server()
    load_before = os.getloadavg()[0]
    local = [in_process(args.items) for _ in range(args.repeat)]
    rows = [("in process (reference)", WIDTH, [wall for wall, _ in local])]
    local_cpu = [cpu * 1000 for _, cpu in local]
    costs: list[tuple[str, int, list[Costs]]] = []
    unread: dict[str, None] = {}  # why the server's CPU could not be read, once each
    for n in args.workers:
        slots = n * args.per_worker
        plural = "s" * (n > 1)
        for name, how in ((f"dbos floor, {n} worker{plural}", floor),
                          (f"dbos, {n} worker{plural}", through_dbos)):
            if how is floor and args.no_floor:
                continue
            runs = [how(base, args.items, n, args.per_worker, max(WIDTH, 2 * slots))
                    for _ in range(args.repeat)]
            rows.append((name, slots, [wall for wall, _, _ in runs]))
            costs.append((name, n, [c for _, c, _ in runs]))
            unread.update(dict.fromkeys(why for _, _, why in runs if why))
    print(f"map {args.items} items x {DELAY * 1000:.0f} ms; "
          f"{args.per_worker} at once per worker; {args.repeat} runs each; "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
          f"({os.cpu_count()} CPUs)")
    print(f"{'configuration':24} {'conc':>4} {'min s':>7} {'median':>7} {'max s':>7} "
          f"{'items/s':>8} {'ideal s':>7} {'overhead ms/attempt':>20}")
    for name, conc, walls in rows:
        med = statistics.median(walls)
        ideal = args.items / conc * DELAY
        overhead = (med * conc / args.items - DELAY) * 1000
        print(f"{name:24} {conc:>4} {min(walls):7.3f} {med:7.3f} {max(walls):7.3f} "
              f"{args.items / med:8.1f} {ideal:7.3f} {overhead:20.1f}")
    _cpu_table(local_cpu, costs)
    for why in unread:
        print(f"server n/a: the PostgreSQL server's CPU could not be read: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
