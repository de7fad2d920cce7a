"""The WAL checkpointer: served on its own connection, stopped cleanly, never creating a
store that is not there; and the WAL it keeps bounded through a run of any length."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.engine.run.runner import Engine, prepare
from rein.store import sqlite_checkpoint as checkpoint
from rein.store.base import RunRow
from rein.store.sqlite import SQLiteStore
from rein.store.sqlite_checkpoint import Checkpointer
from rein.workers.scripted import ScriptedWorker

T = "2026-01-01T00:00:00Z"


def test_every_request_is_served_before_stop_returns(tmp_path: Path) -> None:
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    try:
        checkpointer = Checkpointer(store.path)
        for commits in range(1, 200):
            checkpointer.request(commits)
        checkpointer.stop()  # returns: a stop that races a request is not slept through
        assert checkpointer.runs >= 1
        assert checkpointer.served == 199
        checkpointer.stop()  # a second stop is harmless
    finally:
        store.close()


def test_a_removed_store_is_not_created_by_the_checkpointer(tmp_path: Path) -> None:
    gone = tmp_path / "rein.db"
    checkpointer = Checkpointer(gone)
    checkpointer.request(1)
    checkpointer.stop()
    assert not gone.exists()
    assert checkpointer.runs == 0


def _map(items: int) -> dict[str, Any]:
    """One map node over ``items`` numbers whose body is one task, four items at a time."""
    body = {"title": "item", "entrypoints": ["w"],
            "nodes": {"w": {"title": "work", "description": "one item"}}}
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/long-map",
            "title": "a long map", "objective": "commit many times", "requires_conformance": 3,
            "constraints": {"max_parallel_nodes": 4}, "entrypoints": ["fan"],
            "params": {"xs": {"type": "array", "description": "items",
                              "default": list(range(items))}},
            "nodes": {"fan": {"type": "map", "title": "fan", "description": "per item",
                              "map": {"over": "params.xs", "as": "x", "max_items": items,
                                      "max_parallel": 4, "body": body}}}}


# What a run of any length may leave in the WAL: SQLite's own automatic checkpoint keeps
# about 4 MB, and a map item's commit is a few pages, so BEHIND commits stay well under it.
WAL_BOUND = 12 * 1024 * 1024


def test_the_wal_stays_bounded_however_long_the_run(tmp_path: Path) -> None:
    # 1,500 map items, one commit each (the scripted worker, a test double, answers at
    # once): every commit's pages go through the WAL, some 40 MB in all. Measured after
    # every event, the WAL file never grows past the bound, which does not depend on the
    # length of the run: the WAL is rewound, not only copied into the database file.
    items = 1500
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(_map(items), sort_keys=False))
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    wal = Path(f"{store.path}-wal")
    sizes: list[int] = []

    def measure(event: Any) -> None:
        sizes.append(wal.stat().st_size if wal.exists() else 0)

    engine = Engine(workspace=tmp_path, store=store, listeners=[measure], env={},
                    workers=(ScriptedWorker({"nodes": {"w": [{"outputs": {}}]}}),))
    prepared = prepare(path, given={}, env={})
    try:
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
        commits = store._commits
    finally:
        store.close()
    assert outcome.status.value == "succeeded"
    assert commits >= items
    assert len(sizes) >= 2 * items
    assert max(sizes) <= WAL_BOUND, f"the WAL grew to {max(sizes):,} bytes"
    assert not wal.exists()  # the last connection folded it into the file


def test_a_wal_grown_by_one_huge_commit_is_cut_back_once_rewound(tmp_path: Path) -> None:
    # One commit of 24 MB must go through the WAL whole; the file stays that size until
    # SQLite rewinds it, and is then cut back to SIZE_LIMIT instead of staying 24 MB.
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    wal = Path(f"{store.path}-wal")
    run = RunRow(run_id=RunId("r1"), graph_id="g", graph_path="g.agraph.yaml",
                 graph_digest="sha256-x=", status=RunStatus.RUNNING, started_at=T)
    try:
        store.create_run(run, event_type="run/started", payload={})
        store.transition(RunId("r1"), "x/huge", {"text": "x" * (24 * 1024 * 1024)}, T)
        grown = wal.stat().st_size
        # Small commits, past BEHIND: the store's connection checkpoints (once the thread
        # has copied the huge one), and the next write rewinds the WAL.
        for n in range(checkpoint.BEHIND + 2):
            store.transition(RunId("r1"), "x/small", {"n": n}, T)
        after = wal.stat().st_size
    finally:
        store.close()
    assert grown > 24 * 1024 * 1024
    assert after <= checkpoint.SIZE_LIMIT
