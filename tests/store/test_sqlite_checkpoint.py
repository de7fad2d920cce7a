"""The WAL checkpointer: served on its own connection, stopped cleanly, never creating a
store that is not there."""

from __future__ import annotations

from pathlib import Path

from rein.store.sqlite import SQLiteStore
from rein.store.sqlite_checkpoint import Checkpointer


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
