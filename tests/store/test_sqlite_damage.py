"""The embedded store when its file or its disk goes wrong: each case is a StoreError whose
code says what happened and whose hint says what to do, never a traceback, and never a
store silently started afresh."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main
from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.errors import StoreError
from rein.store.base import RunRow
from rein.store.sqlite import SQLiteStore, db_path

PAGE = 4096


def _run(run_id: str) -> RunRow:
    return RunRow(run_id=RunId(run_id), graph_id="g", graph_path="g.agraph.yaml",
                  graph_digest="sha256-abc=", status=RunStatus.RUNNING,
                  started_at="2026-01-01T00:00:00Z", binding={})


def store_with_history(workspace: Path, runs: int = 3) -> Path:
    store = SQLiteStore.open(workspace)
    assert store is not None
    for i in range(runs):
        store.create_run(_run(f"run-{i}"), event_type="run/started", payload={"i": i})
        for n in range(50):
            store.transition(RunId(f"run-{i}"), "node/note", {"text": "x" * 200, "n": n}, "t")
    store.close()
    return db_path(workspace)


def cli_error(capsys: Any, *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main([*args, "--json"]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return json.loads(captured.out)["error"]


# ---------------------------------------------------------------------------- truncated


def test_a_store_truncated_to_zero_bytes_is_refused_not_recreated(workspace: Path,
                                                                    capsys: Any) -> None:
    path = store_with_history(workspace)
    os.truncate(path, 0)
    with pytest.raises(StoreError) as info:
        SQLiteStore.open(workspace, create=True)
    assert info.value.code == "STORE_EMPTY"
    assert "was truncated" in info.value.message
    assert path.stat().st_size == 0  # left as found: nothing was created over it
    error = cli_error(capsys, "runs", "list")
    assert error["code"] == "STORE_EMPTY"
    assert "restore .rein/rein.db from a backup" in error["hint"]
    assert cli_error(capsys, "next")["code"] == "STORE_EMPTY"


def test_a_new_store_appears_whole_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    store.close()
    names = {p.name for p in (tmp_path / ".rein").iterdir()}
    assert names <= {"rein.db", "rein.db-wal", "rein.db-shm"}
    assert db_path(tmp_path).stat().st_size > 0


# ---------------------------------------------------------------------------- damaged


def corrupt_pages(path: Path) -> None:
    """Overwrite every page after the first (the schema) with garbage."""
    size = path.stat().st_size
    assert size > 4 * PAGE
    with path.open("r+b") as fh:
        fh.seek(PAGE)
        fh.write(b"\xa5" * (size - PAGE))


def test_corrupted_pages_are_a_store_error(workspace: Path, capsys: Any) -> None:
    path = store_with_history(workspace)
    corrupt_pages(path)
    with pytest.raises(StoreError) as info:
        store = SQLiteStore.open(workspace)
        assert store is not None
        store.events(RunId("run-0"))
    # SQLite's damaged page had the whole file checked: damaged, and said so.
    assert info.value.code == "STORE003"
    assert isinstance(info.value.__cause__, sqlite3.DatabaseError)
    assert "integrity check found" in info.value.message
    error = cli_error(capsys, "runs", "list")
    assert error["code"] == "STORE003"
    assert "mkdir damaged && mv rein.db* damaged/" in error["hint"]
    assert cli_error(capsys, "next")["code"] == "STORE003"


def test_a_file_that_is_not_a_database_is_a_store_error(workspace: Path, capsys: Any) -> None:
    db_path(workspace).parent.mkdir()
    db_path(workspace).write_bytes(b"\x00garbage" * 1000)
    assert cli_error(capsys, "runs", "list")["code"] == "STORE001"


# ---------------------------------------------------------------------------- full disk


def test_a_full_disk_is_reported_as_full_and_nothing_committed_is_lost(tmp_path: Path) -> None:
    store_with_history(tmp_path, runs=1)
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    # SQLite's own page quota fails a write with SQLITE_FULL, exactly as a full disk does.
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreError) as info:
        store.transition(RunId("run-0"), "node/note", {"text": "y" * 50 * PAGE}, "t")
    assert info.value.code == "STORE_FULL"
    assert "is full" in info.value.message
    assert info.value.hint and "move .rein/ aside" not in info.value.hint
    assert "everything committed before it is intact" in info.value.hint
    # The connection is usable again once there is room, and the history is whole.
    store._db.execute("PRAGMA max_page_count = 1073741823")
    assert len(store.events(RunId("run-0"))) == 51
    store.transition(RunId("run-0"), "node/note", {"text": "fits"}, "t")
    assert len(store.events(RunId("run-0"))) == 52
    store.close()


def test_a_busy_store_is_busy_not_damaged(tmp_path: Path) -> None:
    store_with_history(tmp_path, runs=1)
    holder = sqlite3.connect(db_path(tmp_path), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        store = SQLiteStore.open(tmp_path)
        assert store is not None
        store._db.execute("PRAGMA busy_timeout = 0")  # fail at once: bound the wait, not time it
        with pytest.raises(StoreError) as info:
            store.transition(RunId("run-0"), "node/note", {}, "t")
        assert info.value.code == "STORE_BUSY"
        store.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.parametrize("make", ["fifo", "dev-zero"])
def test_a_store_path_that_is_not_a_regular_file_is_refused(workspace: Path, capsys: Any,
                                                            make: str) -> None:
    path = db_path(workspace)
    path.parent.mkdir()
    if make == "fifo":
        os.mkfifo(path)  # SQLite would block reading it
    else:
        path.symlink_to("/dev/zero")
    error = cli_error(capsys, "runs", "list")
    assert error["code"] == "STORE_OPEN"
    assert error["message"].endswith("is not a regular file")
