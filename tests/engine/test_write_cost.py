"""What a node costs the store, counted rather than timed: SQL statements and commits.

A run writes a node's start with its first attempt in one commit, and the attempt's end
with the node's and what the scheduling step it wakes decides (edges resolved, nodes
skipped) in one more. A node's end is held for what it sets off: a map item's end commits
with the next item's start, so a map item costs one commit; a node that calls no worker
costs one, its row written once. Counted through SQLite's trace callback, so the numbers are exact and the same
on every machine.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from rein.engine.run.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore
from rein.workers.scripted import ScriptedWorker

WIDTH = 10


def layered(n: int) -> dict[str, Any]:
    """``n`` tasks in layers of ten, each depending on every node of the layer before."""
    nodes: dict[str, Any] = {}
    for i in range(n):
        layer = i // WIDTH
        node: dict[str, Any] = {"title": f"n{i}", "description": "work"}
        if layer:
            node["depends_on"] = [f"n{j}" for j in range((layer - 1) * WIDTH, layer * WIDTH)]
        nodes[f"n{i}"] = node
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/layered",
            "title": "layers", "objective": "count writes", "requires_conformance": 3,
            "entrypoints": [f"n{i}" for i in range(WIDTH)], "nodes": nodes}


def mapped(items: int) -> dict[str, Any]:
    body = {"title": "item", "entrypoints": ["w"],
            "nodes": {"w": {"title": "work", "description": "one item"}}}
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/map", "title": "map",
            "objective": "count writes", "requires_conformance": 3,
            "constraints": {"max_parallel_nodes": 4}, "entrypoints": ["fan"],
            "params": {"xs": {"type": "array", "description": "items",
                              "default": list(range(items))}},
            "nodes": {"fan": {"type": "map", "title": "fan", "description": "per item",
                              "map": {"over": "params.xs", "as": "x", "max_items": items,
                                      "max_parallel": 4, "body": body}}}}


def count_writes(tmp_path: Path, graph: dict[str, Any], answers: dict[str, Any]
                 ) -> dict[str, int]:
    """Run ``graph`` to success; the statements and commits of the run itself."""
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    engine = Engine(workspace=tmp_path, store=store, workers=(ScriptedWorker(answers),),
                    env={})
    prepared = prepare(path, given={}, env={})
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    try:
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    finally:
        store._db.set_trace_callback(None)
        store.close()
    assert outcome.status.value == "succeeded"
    return {"statements": len(seen), "commits": sum(s == "COMMIT" for s in seen),
            "begins": sum(s.startswith("BEGIN") for s in seen),
            "node_rows": sum(s.startswith("INSERT INTO nodes") for s in seen)}


def test_a_layered_run_commits_twice_per_node(tmp_path: Path) -> None:
    n = 50
    graph = layered(n)
    got = count_writes(tmp_path, graph, {"nodes": {k: [{"outputs": {}}] for k in graph["nodes"]}})
    assert got["begins"] == got["commits"]  # every transaction ended in a commit
    # Per node: its start with its first attempt's, then the attempt's end with the node's
    # and what the scheduling step it wakes writes (one event per outgoing edge, 9 per node
    # here): two commits, each writing the node's row once (a row the same transaction
    # replaces is never written), in BEGIN, the first event's sequence number, one INSERT
    # of the events, one of the rows and COMMIT.
    assert got["commits"] <= 2 * n, got
    assert got["node_rows"] <= 2 * n, got
    assert got["statements"] <= 10 * n, got


def test_a_map_item_commits_once(tmp_path: Path) -> None:
    items = 40
    got = count_writes(tmp_path, mapped(items), {"nodes": {"w": [{"outputs": {}}]}})
    assert got["begins"] == got["commits"]
    # One item's attempt end and node end commit with the next item's node start and
    # attempt start: BEGIN, the first event's sequence number, the events, the two nodes'
    # rows in one statement, COMMIT. The last item of each of the four runners ends on its
    # own.
    assert got["commits"] <= items + 5, got
    assert got["node_rows"] <= items + 5, got
    assert got["statements"] <= 6 * items + 5, got


def decisions(n: int) -> dict[str, Any]:
    """A chain of ``n`` decisions by expression: nodes with no worker to call."""
    nodes: dict[str, Any] = {}
    for i in range(n):
        node: dict[str, Any] = {
            "type": "decision", "title": f"n{i}", "description": "decide",
            "decision": {"evaluator": "expression", "default_branch": "odd", "branches": [
                {"label": "even", "description": "even", "when": f"{i} % 2 == 0"},
                {"label": "odd", "description": "odd", "when": f"{i} % 2 == 1"}]}}
        if i:
            node["depends_on"] = [f"n{i - 1}"]
        nodes[f"n{i}"] = node
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/decisions",
            "title": "decisions", "objective": "count writes", "requires_conformance": 3,
            "entrypoints": ["n0"], "nodes": nodes}


def test_a_node_without_a_worker_writes_its_row_once(tmp_path: Path) -> None:
    # A node that calls no worker (benchmarks/store_cost.py's) starts and ends in one
    # transaction: its start, its end and the edge it resolves, and its row once, at its
    # end: BEGIN, the first event's sequence number, one INSERT of the events, one of the
    # row, COMMIT. Counted as what one more node adds, so the run's own start and end
    # cancel out.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    small = count_writes(tmp_path / "a", decisions(20), {"nodes": {}})
    large = count_writes(tmp_path / "b", decisions(40), {"nodes": {}})
    per_node = {k: (large[k] - small[k]) / 20 for k in large}
    assert per_node == {"statements": 5, "commits": 1, "begins": 1, "node_rows": 1}, per_node



def test_a_node_row_is_rendered_once_per_commit(tmp_path: Path, monkeypatch: Any) -> None:
    # A node row held back and replaced by the same transaction (a no-worker node's start
    # by its end) is never written, nor rendered to JSON: one record rendered per row
    # written, counted as what one more node adds.
    from rein.store.sql import events

    rendered: list[int] = []
    real = events.dump

    def counting(value: Any) -> str:
        if isinstance(value, dict) and "node_id" in value and "status" in value:
            rendered.append(1)  # a node record, not an event's payload
        return real(value)

    monkeypatch.setattr(events, "dump", counting)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    small = count_writes(tmp_path / "a", decisions(20), {"nodes": {}})
    at_small = len(rendered)
    large = count_writes(tmp_path / "b", decisions(40), {"nodes": {}})
    per_node = (len(rendered) - 2 * at_small) / 20
    assert (large["node_rows"] - small["node_rows"]) / 20 == 1
    assert per_node == 1, per_node


def _started(tmp_path: Path, graph: dict[str, Any], answers: dict[str, Any]) -> tuple[int, Any]:
    """Run ``graph`` to success; how many asyncio tasks the run created."""
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    engine = Engine(workspace=tmp_path, store=store, workers=(ScriptedWorker(answers),),
                    env={})
    prepared = prepare(path, given={}, env={})
    created = 0

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        nonlocal created
        created += 1
        return asyncio.Task(coro, loop=loop, **kw)

    async def main() -> Any:
        asyncio.get_running_loop().set_task_factory(counting)
        return await engine.start(prepared, approved=prepared.digest)

    try:
        outcome = asyncio.run(main())
    finally:
        store.close()
    assert outcome.status.value == "succeeded"
    return created, outcome


def test_a_map_item_runs_without_a_task_of_its_own(tmp_path: Path) -> None:
    # The item's one node is the only one running in its scope, so it is awaited in place:
    # no task, done callback and wait per item, only the map's four runners.
    created, _ = _started(tmp_path, mapped(40), {"nodes": {"w": [{"outputs": {}}]}})
    assert created <= 4 + 5, created


def test_a_chain_runs_its_nodes_in_place(tmp_path: Path) -> None:
    n = 30
    nodes = {f"n{i}": {"title": f"n{i}", "description": "work",
                       **({"depends_on": [f"n{i - 1}"]} if i else {})} for i in range(n)}
    graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/chain",
             "title": "chain", "objective": "count tasks", "requires_conformance": 3,
             "entrypoints": ["n0"], "nodes": nodes}
    created, _ = _started(tmp_path, graph, {"nodes": {k: [{"outputs": {}}] for k in nodes}})
    assert created <= 5, created


def test_a_layer_still_runs_its_nodes_side_by_side(tmp_path: Path) -> None:
    # Ten nodes ready at once are ten tasks: running one in place is only for a lone node.
    graph = {**layered(20), "constraints": {"max_parallel_nodes": WIDTH}}
    created, _ = _started(tmp_path, graph,
                          {"nodes": {k: [{"outputs": {}}] for k in graph["nodes"]}})
    assert created >= 20, created


def test_a_fresh_run_parses_its_graph_once(tmp_path: Path, monkeypatch: Any) -> None:
    # start() reads the file once, holds that data to the approval and runs it: no second
    # read under the lock (a second parse of a graph with a large default param was most
    # of the time before the first item started). The bytes it reads are the ones prepare()
    # parsed, so it parses nothing: prepare's parse was the one.
    from rein.formats import loader

    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(mapped(3), sort_keys=False))
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    engine = Engine(workspace=tmp_path, store=store,
                    workers=(ScriptedWorker({"nodes": {"w": [{"outputs": {}}]}}),), env={})
    prepared = prepare(path, given={}, env={})
    parses = 0
    real = loader._load_yaml

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal parses
        parses += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(loader, "_load_yaml", counted)
    try:
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    finally:
        store.close()
    assert outcome.status.value == "succeeded"
    assert parses == 0, parses


def _map_run(tmp_path: Path, items: int) -> tuple[list[str], SQLiteStore]:
    """A map run; the statements its store's own connection ran, and the closed store."""
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(mapped(items), sort_keys=False))
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    engine = Engine(workspace=tmp_path, store=store,
                    workers=(ScriptedWorker({"nodes": {"w": [{"outputs": {}}]}}),), env={})
    prepared = prepare(path, given={}, env={})
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    try:
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    finally:
        store.close()
    assert outcome.status.value == "succeeded"
    return seen, store


def test_checkpoints_run_on_their_own_thread_not_in_a_commit(tmp_path: Path,
                                                             monkeypatch: Any) -> None:
    from rein.store import sqlite_checkpoint

    monkeypatch.setattr(sqlite_checkpoint, "EVERY", 10)
    # The fallback past BEHIND unserved commits (the thread starved of the CPU) is the next
    # test's: here the thread alone checkpoints, however late it gets to run.
    monkeypatch.setattr(sqlite_checkpoint, "BEHIND", 10**9)
    # A fold that finds the thread's checkpoint still running is busy and tried again at
    # the next commit: count the folds that took.
    took: list[bool] = []
    fold = SQLiteStore._fold

    def counted(self: SQLiteStore) -> None:
        before = self._folded
        fold(self)
        took.append(self._folded != before)

    monkeypatch.setattr(SQLiteStore, "_fold", counted)
    seen, store = _map_run(tmp_path, 40)
    assert sum(s == "COMMIT" for s in seen) >= 40
    assert store._checkpointer.runs >= 1  # closing waits for every request to be served
    # The store's own connection only copies what was committed while the thread's
    # checkpoint ran (so that the WAL can be rewound), once per request served, right
    # after a commit: never inside one.
    inline = [i for i, s in enumerate(seen) if s.startswith("PRAGMA wal_checkpoint")]
    assert len(inline) == len(took)
    assert sum(took) <= store._checkpointer.runs
    assert all(seen[i - 1] == "COMMIT" for i in inline)


def test_a_checkpointer_that_falls_behind_is_done_inline(tmp_path: Path,
                                                        monkeypatch: Any) -> None:
    # The WAL stays bounded without the thread: past BEHIND unserved commits the committing
    # connection checkpoints, as SQLite's automatic checkpoint would have.
    from rein.store import sqlite_checkpoint

    monkeypatch.setattr(sqlite_checkpoint, "EVERY", 10 ** 9)  # never asks the thread
    monkeypatch.setattr(sqlite_checkpoint, "BEHIND", 20)
    seen, store = _map_run(tmp_path, 40)
    inline = [s for s in seen if s == "PRAGMA wal_checkpoint(PASSIVE)"]
    assert len(inline) >= sum(s == "COMMIT" for s in seen) // 21
    assert store._checkpointer.runs == 0


class HeldWatchingWorker(ScriptedWorker):
    """Test double: the scripted worker, noting whether the store holds an uncommitted
    write (or an open transaction) each time an attempt reaches it."""

    def __init__(self, store: SQLiteStore, answers: dict[str, Any]) -> None:
        super().__init__(answers)
        self.store = store
        self.seen: list[bool] = []

    def run(self, request: Any) -> Any:
        self.seen.append(self.store._held or self.store._depth > 0 or self.store._db.in_transaction)
        return super().run(request)


def test_nothing_is_held_when_a_worker_is_called_or_the_run_ends(tmp_path: Path) -> None:
    # The held node ends share the next item's commit, but a worker (anything outside the
    # process) only ever runs once everything before it is committed.
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(mapped(12), sort_keys=False))
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    worker = HeldWatchingWorker(store, {"nodes": {"w": [{"outputs": {}, "delay_seconds": 0.001}]}})
    engine = Engine(workspace=tmp_path, store=store, workers=(worker,), env={})
    prepared = prepare(path, given={}, env={})
    try:
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
        assert outcome.status.value == "succeeded"
        assert not store._held and not store._db.in_transaction  # the run's end committed
    finally:
        store.close()
    assert worker.seen == [False] * 12, worker.seen


def layered_decisions(n: int) -> dict[str, Any]:
    """:func:`decisions` in layers of ten, each depending on every node of the layer before."""
    graph = decisions(n)
    for i, node in enumerate(graph["nodes"].values()):
        layer = i // WIDTH
        node.pop("depends_on", None)
        if layer:
            node["depends_on"] = [f"n{j}" for j in range((layer - 1) * WIDTH, layer * WIDTH)]
    graph["entrypoints"] = [f"n{i}" for i in range(min(WIDTH, n))]
    return graph


def test_the_edges_out_of_a_node_are_one_write(tmp_path: Path, monkeypatch: Any) -> None:
    """The edges a node's end resolves are written as one call (``Store.append_all``), each an
    event of its own: a node of the layered graph, with ten edges out, makes as many calls
    to the store's write path as a node of a chain, with one."""
    calls: list[str] = []
    for name in ("transition", "append_all"):
        real = getattr(SQLiteStore, name)

        def counted(self: Any, *args: Any, _real: Any = real, _name: str = name,
                    **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(SQLiteStore, name, counted)

    def per_node(graph: Any, small: int, large: int) -> dict[str, float]:
        got = {}
        for n in (small, large):
            calls.clear()
            (tmp_path / f"{graph.__name__}{n}").mkdir()
            count_writes(tmp_path / f"{graph.__name__}{n}", graph(n), {"nodes": {}})
            got[n] = {name: calls.count(name) for name in ("transition", "append_all")}
        return {k: (got[large][k] - got[small][k]) / (large - small) for k in got[large]}

    chain = per_node(decisions, 20, 40)
    assert chain == {"transition": 2, "append_all": 1}, chain  # its start, its end; its edge
    assert per_node(layered_decisions, 20, 40) == chain

