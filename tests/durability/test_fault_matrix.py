"""The fault matrix: every signal, on every surface that runs graph work, at points of the
work, then ``rein resume``; the record must be the uninterrupted run's.

SIGINT, SIGTERM and SIGKILL × ``rein run``, ``rein resume``, ``rein approvals accept``,
``rein submit``, ``rein serve``, ``rein app-server`` and ``rein acp`` × a map item's check,
the child run's check and the last node's check in flight (each surface meets each point
under one of the signals, and each signal each point). What the signal leaves is never a
cancel: no node is ``cancelled`` and the run has not ended, unless the surface finished the
work first (``rein serve`` lets the runs it advances reach their end when asked to stop).
Resuming re-runs what was in flight (marked ``x-rein-rerun``) and nothing that had ended,
and the records of the run and of its child run are the uninterrupted ones, ids and times
aside.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from rein.core.ids import RunId
from rein.store.sqlite import SQLiteStore
from tests.durability.faults import (
    POINTS,
    SIGNALS,
    SURFACES,
    Surface,
    Workspace,
    finish,
    signal_at,
)
from tests.durability.support import finished_counts, normalized, reruns

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals and process groups")

CASES = [pytest.param(surface, sig, POINTS[(i + j) % len(POINTS)],
                      id=f"{surface.name.replace(' ', '-')}-{sig.name}-"
                         f"{POINTS[(i + j) % len(POINTS)]}")
         for i, surface in enumerate(SURFACES) for j, sig in enumerate(SIGNALS)]


def _records(root: Path, run_id: str, *, raw: bool = False) -> list[dict[str, Any]]:
    """The run's record, then its child runs' (read here: no process to start);
    normalised unless ``raw``."""
    from rein.engine.run.record import build_record

    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        ids = [run_id, *[c.run_id for c in store.child_runs(RunId(run_id))]]
        records = [build_record(store, i) for i in ids]
        return records if raw else [normalized(r) for r in records]
    finally:
        store.close()


def _left(root: Path, run_id: str) -> tuple[str, list[str], set[str]]:
    """What a signal left: the run's status, its nodes and child run nodes not ended, and
    every event type of the family."""
    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        run = store.get_run(run_id)
        assert run is not None
        family = [RunId(run_id), *[c.run_id for c in store.child_runs(RunId(run_id))]]
        cancelled = [n.node_key for r in family for n in store.nodes(r)
                     if n.status.value == "cancelled"]
        types = {e.type for r in family for e in store.events(r)}
        return run.status.value, cancelled, types
    finally:
        store.close()


class Expected:
    """Each surface's uninterrupted records, made the first time they are needed (a record
    says on which surface its graph was approved, so each surface has its own)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, surface: Surface) -> list[dict[str, Any]]:
        if surface.name not in self.made:
            ws = Workspace(self.root / surface.name.replace(" ", "-"), surface.variant)
            surface.clean(ws)
            records = _records(ws.root, ws.run_id())
            assert records[0]["status"] == "succeeded", ws.log()
            self.made[surface.name] = records
        return self.made[surface.name]


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> Expected:
    return Expected(tmp_path_factory.mktemp("clean"))


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("surface", "sig", "point"), CASES)
def test_a_signal_mid_work_resumes_to_the_uninterrupted_record(
        tmp_path: Path, expected: Expected, surface: Surface,
        sig: signal.Signals, point: str) -> None:
    ws = Workspace(tmp_path / "ws", surface.variant)
    proc = surface.begin(ws)
    landed = signal_at(proc, ws, point, sig)
    surface.stop(proc)
    assert landed, f"the work ended before {point} was reached: {ws.log()}"
    run_id = ws.run_id()

    status, cancelled, types = _left(ws.root, run_id)
    assert cancelled == [] and "node/cancelled" not in types  # an interrupt is not a cancel
    # Resumable; only the console, asked to stop by SIGINT, lets its runs finish first.
    graceful = surface.name == "serve" and sig is signal.SIGINT
    assert status == ("succeeded" if graceful else "running"), status
    if sig is signal.SIGINT and surface.name in ("run", "resume"):
        assert proc.returncode == 130 and f"rein resume {run_id}" in ws.log()

    assert finish(ws, run_id) == "succeeded", ws.log()
    got = _records(ws.root, run_id)
    assert got == expected(surface)
    if status == "running":  # the work in flight ran again, and only it
        assert sum(reruns(r) for r in _records(ws.root, run_id, raw=True)) >= 1
    assert set(finished_counts(ws.root, run_id).values()) == {1}

