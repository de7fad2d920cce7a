"""What the store costs per node, beside the floor: one raw SQLite commit per node.

The graph needs no worker: ``n`` expression decisions in layers of 10, each depending on
every node of the layer before (``engine.py``'s shape: ten ``edge/resolved`` events per node,
twelve events in all), or with ``--shape chain`` each on the one before it (one edge: three
events per node), so all a node does besides deciding is recording itself. It runs in process, in a child interpreter, with rein's SQLite store in
a fresh temporary workspace. The store's CPU time is the time spent inside its write path
(``transition``, ``flush`` and the commits that end a batch: each counted once, at the
outermost call), from ``time.process_time``.

The floor, measured in the same child right after: with Python's ``sqlite3`` on a database
set up as rein's is (WAL, ``synchronous=NORMAL``), one transaction per node holding one
``INSERT`` of an event-sized row: ``BEGIN IMMEDIATE``, ``INSERT``, ``COMMIT``. Whatever a
store does, a node recorded durably on its own costs at least that. Beside it, the floor of
the rows themselves: the same loop writing the rows the run wrote, read back byte for byte
from its database (per node, its share of the run's events, in seq order, in one statement,
and its node row with its record and figure columns), in tables keyed and indexed as the
store's are (schema 7: the figure columns and the two indexes the usage totals read), so
that what the store adds to the data it must write shows apart.

The run is timed as ``rein run`` makes it: a graph of ``LARGE_SCOPE`` nodes or more advances
with its plan kept out of the collector's passes (``rein.core.collector.settled``). Then the
same run again, untimed, whose writes after its creation are recorded (recorded during the
timed run, they would be so much more for the collector to walk), and the store alone, timed
as the floors are: those writes, in order and grouped as the engine grouped them, made again
on a fresh store in a loop of their own, with one clock reading before and one after (in the
run, the engine's own work runs between the store's calls, and each call reads the clock
twice).

``--parts`` says where the replay's time goes: its statements alone (captured as a replay
runs them, then run by plain ``sqlite3`` on a copy of the database as the writes found it,
with SQLite's own checkpoints) and its Python alone (the same replay with every statement and
commit handed to a double that does nothing, the collector off).

Printed per size: min / median / max over ``--repeat`` runs of the store's CPU per node, in
the run and replayed, and of the floors', their ratios (medians), the events, statements and
commits per node the run made. ``--before SRC``: the same runs with another rein source tree (such as an older
checkout's ``src``) first on the path, interleaved, so before and after come from one run.
Goal (the performance issue): the store within 2x the floor with its rows (the issue's "raw
SQLite commit floor (≈ 0.08 ms)" is that one: a one-row commit costs a fourth of it).

Run: .venv/bin/python benchmarks/store_cost.py [--sizes 1000,5000] [--repeat 3]
     [--shape layered|chain] [--before OLD/src] [--parts]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

GOAL = 2.0

CHILD = r"""
import asyncio, json, sqlite3, sys, tempfile, time
from pathlib import Path
import yaml
from rein.engine.run.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore

n = int(sys.argv[1])
chain = sys.argv[2] == "chain"
nodes = {}
for i in range(n):
    layer = i // 10
    node = {"type": "decision", "title": f"n{i}", "description": "decide",
            "decision": {"evaluator": "expression", "default_branch": "odd", "branches": [
                {"label": "even", "description": "even", "when": f"{i} % 2 == 0"},
                {"label": "odd", "description": "odd", "when": f"{i} % 2 == 1"}]}}
    if chain and i:
        node["depends_on"] = [f"n{i - 1}"]
    elif layer and not chain:
        node["depends_on"] = [f"n{j}" for j in range((layer - 1) * 10, layer * 10)]
    nodes[f"n{i}"] = node
graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "bench/store", "title": "t",
         "objective": "o", "requires_conformance": 3,
         "entrypoints": ["n0"] if chain else [f"n{i}" for i in range(min(10, n))],
         "nodes": nodes}

spent = [0.0]
depth = [0]
recording = [False]  # the second run: its writes are kept for the replay, nothing is timed
writes = []  # the recorded run's writes, in order, as the store was asked for them

def timed(method, name):
    def wrapper(self, *args, **kwargs):
        if depth[0]:
            return method(self, *args, **kwargs)
        if recording[0]:
            writes.append((name, args, kwargs))
            return method(self, *args, **kwargs)
        depth[0] += 1
        start = time.process_time()
        try:
            return method(self, *args, **kwargs)
        finally:
            spent[0] += time.process_time() - start
            depth[0] -= 1
    wrapper.__wrapped__ = method
    return wrapper

create_run = SQLiteStore.create_run
creation = []

def recorded_creation(self, *args, **kwargs):  # the run's creation: replayed untimed
    creation[:] = [args, kwargs]
    writes.clear()
    depth[0] += 1
    try:
        return create_run(self, *args, **kwargs)
    finally:
        depth[0] -= 1

SQLiteStore.create_run = recorded_creation

WRITES = [m for m in ("transition", "append_all", "flush", "_close") if hasattr(SQLiteStore, m)]
for name in WRITES:  # (an older store has no ``append_all``)
    setattr(SQLiteStore, name, timed(getattr(SQLiteStore, name), name))
batch = SQLiteStore.batch

def recorded_batch(self):  # where a group of writes begins and ends
    writes.append(("batch", (), {}))
    inner = batch(self)
    inner.__enter__()
    try:
        yield
    except BaseException:
        if not inner.__exit__(*sys.exc_info()):
            raise
    else:
        inner.__exit__(None, None, None)
    writes.append(("end", (), {}))

import contextlib
from rein.core.collector import settled
from rein.engine.run.graph import LARGE_SCOPE

async def advance(engine, prepared):
    # As `rein run` does (rein.engine.run.prepare): a large graph's plan is kept out of the
    # collector's passes while its run advances.
    with settled() if n >= LARGE_SCOPE else contextlib.nullcontext():
        return await engine.start(prepared, approved=prepared.digest)

with tempfile.TemporaryDirectory() as tmp:
    ws = Path(tmp)
    path = ws / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    store = SQLiteStore.open(ws)
    seen = []
    store._db.set_trace_callback(seen.append)
    engine = Engine(workspace=ws, store=store, workers=(), env={})
    prepared = prepare(path, given={}, env={})
    start = time.process_time()
    out = asyncio.run(advance(engine, prepared))
    run_cpu = time.process_time() - start
    done = sum(1 for r in store.nodes(out.run_id) if r.status.value == "succeeded")
    events = len(store.events(out.run_id))
    store.close()
    assert out.status.value == "succeeded" and done == n, (out.status, done)
    work = [q for q in seen if not q.startswith("PRAGMA")]

    # The same run again, untimed, its writes kept for the replay below (kept during the
    # timed run, they would be more for the collector to walk: a cost of the benchmark's).
    recording[0] = True
    SQLiteStore.batch = contextlib.contextmanager(recorded_batch)
    (ws / "recorded").mkdir()
    store = SQLiteStore.open(ws / "recorded")
    engine = Engine(workspace=ws, store=store, workers=(), env={})
    recorded = asyncio.run(advance(engine, prepare(path, given={}, env={})))
    store.close()
    assert recorded.status.value == "succeeded"

    def replay(target):  # the recorded writes on ``target``, grouped as the engine did
        stack = []
        for name, args, kwargs in writes:
            if name == "batch":
                stack.append(target.batch())
                stack[-1].__enter__()
            elif name == "end":
                stack.pop().__exit__(None, None, None)
            else:
                getattr(target, name)(*args, **kwargs)
        target.flush()

    # The store alone, measured as the floors are: the run's writes after its creation,
    # replayed on a fresh store in a loop of their own (no engine between them, no clock
    # read per call).
    SQLiteStore.batch, SQLiteStore.create_run = batch, create_run
    for name in WRITES:
        setattr(SQLiteStore, name, getattr(SQLiteStore, name).__wrapped__)
    (ws / "again").mkdir()
    store = SQLiteStore.open(ws / "again")
    store.create_run(*creation[0], **creation[1])
    start = time.process_time()
    replay(store)
    replayed = time.process_time() - start
    again = len(store.events(recorded.run_id))
    store.close()
    assert again == events, (again, events)  # the replay wrote what the timed run wrote

    parts = {}
    if sys.argv[3] == "parts":
        import gc, shutil
        from rein.store.sqlite import db_path
        # Where the replay's time goes. Its statements alone: captured as a replay runs them,
        # then run by plain sqlite3 on a copy of the database as the writes found it (WAL,
        # synchronous=NORMAL, SQLite's own checkpoints).
        (ws / "captured").mkdir()
        store = SQLiteStore.open(ws / "captured")
        store.create_run(*creation[0], **creation[1])
        store.close()
        shutil.copy(db_path(ws / "captured"), ws / "as-found.db")
        store = SQLiteStore.open(ws / "captured")
        statements = []
        real = store._db

        class Capture:  # the connection, seen through: every statement kept with its values
            def execute(self, sql, params=()):
                statements.append((sql, params))
                return real.execute(sql, params)

            def __getattr__(self, name):
                return getattr(real, name)

        store._db = Capture()
        replay(store)
        store._db = real
        store.close()
        db = sqlite3.connect(str(ws / "as-found.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        work_only = [(q, v) for q, v in statements if not q.startswith("PRAGMA")]
        start = time.process_time()
        for q, v in work_only:
            db.execute(q, v).fetchall()
        parts["sql"] = time.process_time() - start
        db.close()

        # Its Python alone: the same replay with every statement and commit handed to a
        # double that does nothing (a read of the run's last event number answers 0), the
        # collector off so that its passes are not counted.
        class NoRows:
            def fetchone(self):
                return (0,)

            def fetchall(self):
                return []

        (ws / "python").mkdir()
        store = SQLiteStore.open(ws / "python")
        store.create_run(*creation[0], **creation[1])
        store.flush()
        store._execute = lambda sql, params=(): NoRows()
        store._end = lambda commit: None
        gc.collect()
        gc.disable()
        start = time.process_time()
        replay(store)
        parts["python"] = time.process_time() - start
        gc.enable()

    db = sqlite3.connect(str(ws / "floor.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE events (run_id TEXT, seq INTEGER, type TEXT, payload TEXT,"
               " at TEXT, PRIMARY KEY (run_id, seq))")
    payload = json.dumps({"node": "n1234", "type": "decision", "title": "n1234"})
    start = time.process_time()
    for seq in range(n):
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?)",
                   ("run-1", seq, "node/finished", payload, "2026-01-01T00:00:00.000000Z"))
        db.execute("COMMIT")
    floor = time.process_time() - start
    # The same floor writing the rows this run wrote, as the store lays them out: the run's
    # own events and node rows, read back byte for byte from its database, in tables with the
    # store's keys and indexes (schema 7: the node row's figure columns and the indexes the
    # usage totals read), one transaction per node: its share of the events in seq order (one
    # multi-row INSERT) and its node row (one INSERT); no event number read, no upsert.
    from rein.store.sql.runs import COLUMNS, READ_WHOLE
    from rein.store.sqlite import db_path
    written = sqlite3.connect(str(db_path(ws)))
    run_events = written.execute("SELECT run_id, seq, type, payload, at FROM events WHERE"
                                 " run_id = ? ORDER BY seq", (out.run_id,)).fetchall()
    run_nodes = written.execute(f"SELECT run_id, node_key, node_id, scope_path, type, status,"
                                f" seq, record, {', '.join(COLUMNS)} FROM nodes WHERE"
                                " run_id = ? ORDER BY seq", (out.run_id,)).fetchall()
    written.close()
    assert len(run_events) == events and len(run_nodes) == n
    db.execute("CREATE TABLE nodes (run_id TEXT NOT NULL, node_key TEXT NOT NULL, node_id TEXT"
               " NOT NULL, scope_path TEXT NOT NULL, type TEXT NOT NULL, status TEXT NOT NULL,"
               " seq INTEGER NOT NULL, record TEXT NOT NULL, "
               + "".join(f"{c}, " for c in COLUMNS) + "PRIMARY KEY (run_id, node_key))")
    db.execute("CREATE INDEX nodes_seq ON nodes (run_id, seq)")
    db.execute("CREATE INDEX nodes_facts ON nodes (run_id, type, status, facts)")
    db.execute(f"CREATE INDEX nodes_by_record ON nodes (run_id) WHERE {READ_WHOLE}")
    node_sql = f"INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?{', ?' * len(COLUMNS)})"
    shares = []  # per node: the statement and the flat values of its events
    for i in range(n):
        share = run_events[i * events // n:(i + 1) * events // n]
        shares.append(("INSERT INTO events VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * len(share)),
                       [v for row in share for v in ("run-2", *row[1:])]))
    start = time.process_time()
    for (sql, values), row in zip(shares, run_nodes):
        db.execute("BEGIN IMMEDIATE")
        db.execute(sql, values)
        db.execute(node_sql, ("run-2", *row[1:]))
        db.execute("COMMIT")
    rows_floor = time.process_time() - start
    db.close()
print(json.dumps({"store": spent[0], "run": run_cpu, "floor": floor, "events": events,
                  "replayed": replayed,
                  "rows_floor": rows_floor, **parts,
                  "statements": len(work), "commits": sum(q == "COMMIT" for q in work)}))
"""


def once(n: int, shape: str, src: str | None, parts: bool) -> dict[str, float]:
    env = {**os.environ}
    if src:
        env["PYTHONPATH"] = src
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), shape,
                          "parts" if parts else "whole"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def spread(values: list[float], n: int) -> str:
    per = sorted(1000 * v / n for v in values)
    return f"{per[0]:7.3f} {statistics.median(per):7.3f} {per[-1]:7.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000", help="graph sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size")
    parser.add_argument("--shape", choices=("layered", "chain"), default="layered",
                        help="ten edges per node (layers of ten) or one (a chain)")
    parser.add_argument("--before", metavar="SRC", help="another rein source tree, beside")
    parser.add_argument("--parts", action="store_true",
                        help="also where the replay's time goes: its statements alone (run "
                             "by plain sqlite3) and its Python alone (no statement run)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    forms = {"": None, **({"before": args.before} if args.before else {})}
    rows = []
    for n in [int(s) for s in args.sizes.split(",") if s.strip()]:
        samples: dict[str, list[dict[str, float]]] = {label: [] for label in forms}
        for i in range(args.repeat):  # interleaved: a change of load hits every row
            for label, src in forms.items():
                print(f"{n} nodes, {label or 'this tree'}, run {i + 1}/{args.repeat} ...",
                      file=sys.stderr)
                samples[label].append(once(n, args.shape, src, args.parts))
        rows += [(label, n, got) for label, got in samples.items()]
    print(f"store cost per node of a no-worker graph ({args.shape}), n={args.repeat}, load "
          f"average {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; CPU ms "
          "per node, min median max")
    print(f"{'':<7}{'nodes':>6}  {'store':^23}  {'floor: raw SQLite':^23}  {'ratio':>6}  "
          f"{'floor with its rows':^23}  {'ratio':>6}  {'store, replayed':^23}  {'ratio':>6}  "
          f"{'run':^23}  events/node  stmts/node  commits/node")
    verdicts = []
    for label, n, got in rows:
        store = statistics.median(s["store"] for s in got)
        floor = statistics.median(s["floor"] for s in got)
        rows_floor = statistics.median(s["rows_floor"] for s in got)
        replayed = statistics.median(s["replayed"] for s in got)
        print(f"{label:<7}{n:>6}  {spread([s['store'] for s in got], n)}  "
              f"{spread([s['floor'] for s in got], n)}  {store / floor:6.2f}  "
              f"{spread([s['rows_floor'] for s in got], n)}  {store / rows_floor:6.2f}  "
              f"{spread([s['replayed'] for s in got], n)}  {replayed / rows_floor:6.2f}  "
              f"{spread([s['run'] for s in got], n)}  {got[0]['events'] / n:11.2f}  "
              f"{got[0]['statements'] / n:10.2f}  {got[0]['commits'] / n:12.2f}")
        if not label:
            verdicts.append((n, store / rows_floor, replayed / rows_floor))
    if args.parts:
        print(f"\nthe replay in parts, CPU ms per node, min median max\n{'':<7}{'nodes':>6}  "
              f"{'store, replayed':^23}  {'its statements alone':^23}  {'its Python alone':^23}"
              f"  {'floor with its rows':^23}")
        for label, n, got in rows:
            print(f"{label:<7}{n:>6}  {spread([s['replayed'] for s in got], n)}  "
                  f"{spread([s['sql'] for s in got], n)}  "
                  f"{spread([s['python'] for s in got], n)}  "
                  f"{spread([s['rows_floor'] for s in got], n)}")
    print("\nstore = CPU inside the store's write path; floor = BEGIN IMMEDIATE, one INSERT, "
          "COMMIT per node on a WAL database (synchronous=NORMAL); floor with its rows = the "
          "same writing the run's own events and node rows (a node's share per transaction) "
          "in the store's tables and indexes; store, replayed = the run's writes made again on a fresh "
          "store in a loop of their own, timed as the floors are; run = the whole run's CPU")
    for n, ratio, alone in verdicts:
        print(f"goal: the store within {GOAL}x the floor with its rows at {n} nodes: in the run "
              f"{ratio:.2f}x -> {'met' if ratio <= GOAL else 'NOT MET'}; replayed {alone:.2f}x "
              f"-> {'met' if alone <= GOAL else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
