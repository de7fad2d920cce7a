"""A commit that fails where nobody hears it stops the run; resumed, it is the clean record.

A held write (a node's end, committed with what it sets off) is committed on the event
loop's next turn when nothing writes before. A failure there (a full disk, a busy store)
has no caller to raise to: asyncio would only log it, and the run went on as if the write
had committed, its later writes resting on one the file never got. The store now keeps
the failure and raises it at the next write, or when closed. Here the store fails the k-th
commit once, for every k (a test double of a full disk: it raises, writes nothing of that
transaction, and works again afterwards), and a new engine resumes the run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.engine.run.runner import prepare
from rein.errors import StoreError
from rein.store.sqlite import SQLiteStore, db_path
from tests.durability.support import finished_counts, normalized, record, runs
from tests.durability.test_crash_commits import _engine, _resume, fan


class FullOnce(SQLiteStore):
    """SQLite whose ``fail_at``-th COMMIT fails as a full disk would, once (never, with 0):
    the transaction is not committed, and what comes after works again."""

    def __init__(self, path: Path, fail_at: int) -> None:
        self.commits, self.fail_at = 0, fail_at
        self.failed_on_loop = False
        super().__init__(path)

    def _x(self, sql: str, params: Any = ()) -> Any:
        if sql == "COMMIT":
            self.commits += 1
            if self.commits == self.fail_at:
                super()._x("ROLLBACK")
                raise StoreError("database or disk is full", code="STORE_FULL")
        return super()._x(sql, params)

    def flush_on_loop(self) -> None:
        held = self._held
        super().flush_on_loop()
        if held and self._failed is not None:
            self.failed_on_loop = True


def _start(workspace: Path, fail_at: int, seen: list[FullOnce] | None = None
           ) -> tuple[int, bool]:
    graph, answers = fan()
    path = workspace / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    db_path(workspace).parent.mkdir(parents=True, exist_ok=True)
    store = FullOnce(db_path(workspace), fail_at)
    if seen is not None:
        seen.append(store)
    prepared = prepare(path, given={}, env={})
    try:
        asyncio.run(_engine(workspace, store, answers).start(prepared,
                                                              approved=prepared.digest))
    finally:
        store.close()
    return store.commits, store.failed_on_loop


@pytest.mark.timeout(300)
def test_a_commit_failing_on_the_loops_turn_stops_the_run_and_resumes_clean(
        tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    total, _ = _start(clean, fail_at=0)
    [row] = runs(clean)
    expected = normalized(record(clean, row["run_id"]))
    every_node_once = {k: 1 for k in ("a", "b0", "b1", "b2", "b3", "c")}
    on_loop = 0
    for k in range(2, total + 1):
        ws = tmp_path / f"full{k}"
        ws.mkdir()
        seen: list[FullOnce] = []
        with pytest.raises(StoreError) as raised:
            _start(ws, fail_at=k, seen=seen)
        assert raised.value.code == "STORE_FULL", f"commit {k}"
        on_loop += seen[0].failed_on_loop
        [row] = runs(ws)
        assert row["status"] == "running", f"commit {k}"
        assert _resume(ws, row["run_id"]) == "succeeded", f"commit {k}"
        assert normalized(record(ws, row["run_id"])) == expected, f"commit {k}"
        assert finished_counts(ws, row["run_id"]) == every_node_once, f"commit {k}"
    assert on_loop > 0  # some of those commits were a held write's, on the loop's turn
