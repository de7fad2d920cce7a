"""A crash at every commit of a run, resumed: the record is the uninterrupted one.

The engine writes a scheduling step's edges and skips in one transaction, and lets a node's
start commit with its first attempt and an attempt's end with the node's. A process dying
can therefore leave only the state of some commit boundary. Here the store "dies" (raises,
writes nothing more, and closes with its transaction rolled back, as SQLite does for a
killed process) as it is about to commit for the k-th time, for every k; a new engine then
resumes the run from what the file holds.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.core.ids import RunId
from rein.engine.run.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore, db_path
from rein.workers.scripted import ScriptedWorker
from tests.durability.support import (
    event_count,
    finished_counts,
    normalized,
    record,
    rein,
    runs,
    start,
    wait_for,
    write_graph,
)
from tests.engine.helpers import no_wait


class Crash(BaseException):
    """The process died here."""


class DyingStore(SQLiteStore):
    """SQLite that dies just before its ``die_at``-th commit (never, with 0)."""

    def __init__(self, path: Path, die_at: int) -> None:
        self.commits, self.die_at, self.dead = 0, die_at, False
        super().__init__(path)

    def _x(self, sql: str, params: Any = ()) -> Any:
        if self.dead:
            raise Crash
        if sql == "COMMIT":
            self.commits += 1
            if self.commits == self.die_at:
                self.dead = True
                raise Crash
        return super()._x(sql, params)

    def close(self) -> None:
        if self.dead:  # a dead process commits nothing: its open transaction is lost
            self._db.close()
            return
        super().close()


def fan() -> tuple[dict[str, Any], dict[str, Any]]:
    """One node fanning out to four (one retried), a conditional edge that is never taken
    (skipping two nodes), and a join; two nodes at a time."""
    b = {f"b{i}": {"title": f"b{i}", "description": "work", "depends_on": ["a"]}
         for i in range(4)}
    b["b1"]["failure"] = {"retry": {"max_attempts": 2, "backoff": "none",
                                    "retry_on": ["transient"]}}
    nodes = {"a": {"title": "a", "description": "start"}, **b,
             "x": {"title": "x", "description": "never"},
             "y": {"title": "y", "description": "never", "depends_on": ["x"]},
             "c": {"title": "c", "description": "join", "depends_on": list(b)}}
    graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/crash-fan",
             "title": "fan", "objective": "survive a crash at any commit",
             "requires_conformance": 3, "constraints": {"max_parallel_nodes": 2},
             "entrypoints": ["a"], "nodes": nodes,
             "edges": [{"from": "a", "to": "x", "kind": "conditional", "when": "false"}]}
    answers: dict[str, Any] = {"nodes": {k: [{"outputs": {}}] for k in nodes}}
    answers["nodes"]["b1"] = [{"outputs": {}, "failure": "transient"}, {"outputs": {}}]
    return graph, answers


def _engine(workspace: Path, store: SQLiteStore, answers: dict[str, Any]) -> Engine:
    from rein.engine.run.clock import CounterIds, StepClock

    return Engine(workspace=workspace, store=store, workers=(ScriptedWorker(answers),),
                  clock=StepClock(), ids=CounterIds(), env={}, sleep=no_wait)


def _start(workspace: Path, die_at: int,
           given: tuple[dict[str, Any], dict[str, Any]] | None = None) -> int:
    """Run the graph (``fan()`` unless given) in ``workspace`` on a store dying at commit
    ``die_at``; its commits."""
    graph, answers = given or fan()
    path = workspace / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    db_path(workspace).parent.mkdir(parents=True, exist_ok=True)
    store = DyingStore(db_path(workspace), die_at)
    prepared = prepare(path, given={}, env={})
    try:
        outcome = asyncio.run(_engine(workspace, store, answers).start(
            prepared, approved=prepared.digest))
        assert outcome.status.value == "succeeded"
    finally:
        store.close()
    return store.commits


def _resume(workspace: Path, run_id: str,
            given: tuple[dict[str, Any], dict[str, Any]] | None = None) -> str:
    _, answers = given or fan()
    store = SQLiteStore.open(workspace)
    assert store is not None
    try:
        outcome = asyncio.run(_engine(workspace, store, answers).resume(RunId(run_id)))
    finally:
        store.close()
    return outcome.status.value


@pytest.mark.timeout(300)
def test_a_crash_at_any_commit_resumes_to_the_uninterrupted_record(tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    total = _start(clean, die_at=0)
    [row] = runs(clean)
    expected = normalized(record(clean, row["run_id"]))
    assert expected["status"] == "succeeded"
    skipped = [n["node_id"] for n in expected["nodes"] if n["status"] == "skipped"]
    assert sorted(skipped) == ["x", "y"]
    every_node_once = {k: 1 for k in ("a", "b0", "b1", "b2", "b3", "c")}
    assert finished_counts(clean, row["run_id"]) == every_node_once
    assert total >= 8  # the run really spans several commits to die at

    for k in range(2, total + 1):  # commit 1 creates the run: dying there leaves none
        ws = tmp_path / f"crash{k}"
        ws.mkdir()
        with pytest.raises(Crash):
            _start(ws, die_at=k)
        [row] = runs(ws)
        assert row["status"] == "running", f"crash at commit {k}"
        assert _resume(ws, row["run_id"]) == "succeeded", f"crash at commit {k}"
        assert normalized(record(ws, row["run_id"])) == expected, f"crash at commit {k}"
        assert finished_counts(ws, row["run_id"]) == every_node_once, f"crash at commit {k}"


KILLS = 6
SEED = 20261201


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
@pytest.mark.timeout(300)
def test_sigkill_mid_run_then_resume_gives_the_uninterrupted_record(tmp_path: Path) -> None:
    """The same graph run by real rein processes, killed at seeded points and resumed."""
    graph, answers = fan()
    graph["constraints"] = {"max_parallel_nodes": 1}  # one order of events, whatever the timing
    for steps in answers["nodes"].values():
        for step in steps:
            step["delay_seconds"] = 0.03  # time for the kill to land mid-run
    clean = tmp_path / "clean"
    clean.mkdir()
    digest = write_graph(clean, graph, answers)
    assert rein(clean, "run", "g.agraph.yaml", "--approve", digest).returncode == 0
    [row] = runs(clean)
    expected = normalized(record(clean, row["run_id"]))
    total = event_count(clean)

    rng = random.Random(SEED)
    for i in range(KILLS):
        ws = tmp_path / f"kill{i}"
        ws.mkdir()
        write_graph(ws, graph, answers)
        after = rng.randint(2, total - 1)
        proc = start(ws, "run", "g.agraph.yaml", "--approve", digest)
        assert wait_for(lambda ws=ws, after=after, proc=proc: event_count(ws) >= after
                        or proc.poll() is not None)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        [row] = runs(ws)
        if row["status"] == "running":
            done = rein(ws, "resume", row["run_id"])
            assert done.returncode == 0, done.stderr
        assert normalized(record(ws, row["run_id"])) == expected, f"kill {i} after {after}"
        assert set(finished_counts(ws, row["run_id"]).values()) == {1}


WIDTH = 2


def mapped() -> tuple[dict[str, Any], dict[str, Any]]:
    """A map of six items, two at a time: each item's end commits with the next start."""
    body = {"title": "item", "entrypoints": ["w"],
            "nodes": {"w": {"title": "work", "description": "one item"}}}
    graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/crash-map",
             "title": "map", "objective": "survive a crash at any commit",
             "requires_conformance": 3, "constraints": {"max_parallel_nodes": WIDTH},
             "entrypoints": ["fan"],
             "params": {"xs": {"type": "array", "description": "items",
                               "default": list(range(6))}},
             "nodes": {"fan": {"type": "map", "title": "fan", "description": "per item",
                               "map": {"over": "params.xs", "as": "x", "max_items": 6,
                                       "max_parallel": WIDTH, "body": body}}}}
    return graph, {"nodes": {"w": [{"outputs": {}}]}}


def _running_items(workspace: Path, run_id: str) -> int:
    store = SQLiteStore.open(workspace, create=False)
    assert store is not None
    try:
        return sum(1 for n in store.nodes(RunId(run_id))
                   if n.node_id == "w" and n.status.value == "running")
    finally:
        store.close()


@pytest.mark.timeout(300)
def test_a_map_crashed_at_any_commit_never_lost_an_end_it_went_on_from(tmp_path: Path) -> None:
    # An item's end is held until the next item starts: both are in one commit or neither
    # is, so the store never shows more items running than the map's width (an end lost
    # behind the start it made room for), and every crash resumes to the uninterrupted run.
    clean = tmp_path / "clean"
    clean.mkdir()
    total = _start(clean, die_at=0, given=mapped())
    [row] = runs(clean)
    expected = normalized(record(clean, row["run_id"]))
    assert expected["status"] == "succeeded"
    items = {f"fan[{i}].w": 1 for i in range(6)}
    assert finished_counts(clean, row["run_id"]) == {**items, "fan": 1}
    assert total <= 6 + 6  # one commit per item, and the run's own few
    for k in range(2, total + 1):
        ws = tmp_path / f"crash{k}"
        ws.mkdir()
        with pytest.raises(Crash):
            _start(ws, die_at=k, given=mapped())
        [row] = runs(ws)
        assert row["status"] == "running", f"crash at commit {k}"
        assert _running_items(ws, row["run_id"]) <= WIDTH, f"crash at commit {k}"
        assert _resume(ws, row["run_id"], given=mapped()) == "succeeded", f"crash at commit {k}"
        assert normalized(record(ws, row["run_id"])) == expected, f"crash at commit {k}"
        assert finished_counts(ws, row["run_id"]) == {**items, "fan": 1}, f"crash at {k}"


def fail_fast() -> tuple[dict[str, Any], dict[str, Any]]:
    """A fail_fast map: item 0 fails at once while item 1 still works, so the map stops
    item 1 (a cancel, recorded) and fails; its ladder skips it, and the run goes on."""
    graph, answers = mapped()
    fan = graph["nodes"]["fan"]
    fan["map"]["on_item_failure"] = "fail_fast"
    fan["map"]["collect"] = {"done": "nodes.w.status"}
    fan["failure"] = {"on_exhausted": "skip"}
    answers["nodes"] = {"fan[0].w": [{"failure": "tool_error", "delay_seconds": 0.01}],
                        "w": [{"outputs": {}, "delay_seconds": 0.05}]}
    return graph, answers


@pytest.mark.timeout(300)
def test_a_fail_fast_map_crashed_at_any_commit_resumes_to_the_uninterrupted_record(
        tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    total = _start(clean, die_at=0, given=fail_fast())
    [row] = runs(clean)
    expected = normalized(record(clean, row["run_id"]))
    statuses = {n["scope_path"]: n["status"] for n in expected["nodes"] if "scope_path" in n}
    assert statuses == {"fan[0].w": "failed", "fan[1].w": "cancelled"}  # stopped mid-work
    for k in range(2, total + 1):
        ws = tmp_path / f"crash{k}"
        ws.mkdir()
        with pytest.raises(Crash):
            _start(ws, die_at=k, given=fail_fast())
        [row] = runs(ws)
        assert _resume(ws, row["run_id"], given=fail_fast()) == "succeeded", f"crash at {k}"
        assert normalized(record(ws, row["run_id"])) == expected, f"crash at commit {k}"
