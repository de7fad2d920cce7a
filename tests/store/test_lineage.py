"""Walking a run's lineage: up to its top-level run, down to every child, once each.

Every command that continues, drives or traces a child run walks up to its top-level run.
A store whose parent links loop (damaged, or edited by hand) must end that walk with a
diagnostic, not hang the command: the test double below counts the reads and fails the
test once a walk has read far more runs than the store holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.errors import StoreError
from rein.store.base import RunRow

READS_ALLOWED = 50  # far more than the three runs below: a walk past it does not end


def _row(run_id: str, parent: str | None) -> RunRow:
    return RunRow(run_id=RunId(run_id), graph_id="g", graph_path="g.yaml", graph_digest="d",
                  status=RunStatus.WAITING, started_at="2026-01-01T00:00:00Z",
                  parent_run_id=RunId(parent) if parent else None)


class LoopingStore:
    """A test double of the store's run reads whose parent links form a loop."""

    def __init__(self, parents: dict[str, str | None]) -> None:
        self.rows = {k: _row(k, v) for k, v in parents.items()}
        self.reads = 0

    def get_run(self, run_id: str) -> RunRow | None:
        self.reads += 1
        assert self.reads <= READS_ALLOWED, "the walk does not end"
        return self.rows.get(run_id)

    def child_runs(self, parent_run_id: str) -> list[RunRow]:
        self.reads += 1
        assert self.reads <= READS_ALLOWED, "the walk does not end"
        return [r for r in self.rows.values() if r.parent_run_id == parent_run_id]

    def list_runs(self, **_: Any) -> list[RunRow]:
        return list(self.rows.values())


def test_a_parent_loop_ends_the_walk_up_with_a_diagnostic(tmp_path: Path) -> None:
    from rein.workers.driver.status import pick_run

    store = LoopingStore({"run-a": "run-b", "run-b": "run-c", "run-c": "run-a"})
    with pytest.raises(StoreError) as info:
        pick_run(store, "run-a", tmp_path)  # type: ignore[arg-type]
    assert info.value.code == "STORE002"
    assert "run-a" in info.value.message and info.value.hint


def test_the_walk_up_finds_the_top_and_stops_at_a_missing_parent() -> None:
    from rein.store.lineage import top_run_id

    store = LoopingStore({"run-a": "run-b", "run-b": None, "run-x": "run-gone"})
    assert top_run_id(store, "run-a") == "run-b"  # type: ignore[arg-type]
    assert top_run_id(store, "run-b") == "run-b"  # type: ignore[arg-type]
    assert top_run_id(store, "run-x") == "run-x"  # type: ignore[arg-type]
    assert top_run_id(store, "run-none") == "run-none"  # type: ignore[arg-type]


def test_the_walk_down_lists_each_run_once_even_when_links_loop() -> None:
    from rein.store.lineage import family

    store = LoopingStore({"run-a": "run-c", "run-b": "run-a", "run-c": "run-b"})
    assert [r.run_id for r in family(store, "run-a")] == \
        ["run-a", "run-b", "run-c"]  # type: ignore[arg-type]
