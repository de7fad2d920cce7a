"""The event log: one append, publication after commit, the catalogue, subscribe (replay,
then tail, in-process and across processes)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.engine.events import EventLog, EventType, append, subscribe
from rein.protocol.feed import Feed
from rein.store.base import Event, RunRow, Store, Transition
from rein.store.sqlite import SQLiteStore

T = "2026-01-01T00:00:00Z"
R1 = RunId("r1")
BOUND = 60.0  # seconds: a safety bound on a test that would otherwise hang, not a timing


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = SQLiteStore.open(tmp_path)
    assert opened is not None
    opened.create_run(RunRow(run_id=R1, graph_id="g", graph_path="g.agraph.yaml",
                             graph_digest="sha256-x=", status=RunStatus.RUNNING,
                             started_at=T), event_type=EventType.RUN_STARTED, payload={})
    yield opened
    opened.close()


def _take(store: Store, n: int, *, after: int = 0, poll_seconds: float,
          write: Any = None) -> list[Event]:
    """The first ``n`` events ``subscribe`` yields; ``write()`` runs once the replay is done."""
    pending = [] if write is None else [write]

    async def main() -> list[Event]:
        got: list[Event] = []
        stream = subscribe(store, R1, after, poll_seconds=poll_seconds)
        try:
            async for event in stream:
                got.append(event)
                if pending and event.seq == len(store.events(R1)):
                    pending.pop()()  # once, when the replay has caught up
                if len(got) == n:
                    return got
        finally:
            await stream.aclose()
        return got

    return asyncio.run(asyncio.wait_for(main(), BOUND))


def test_append_writes_in_the_catalogue_only(store: Store) -> None:
    event = append(store, R1, EventType.NODE_STARTED, {"node": "a"}, T)
    assert (event.seq, event.type) == (2, "node/started")
    with pytest.raises(ValueError):
        append(store, R1, "node/invented", {}, T)  # type: ignore[arg-type]
    assert [e.type for e in store.events(R1)] == ["run/started", "node/started"]


def test_listeners_get_each_event_once_after_it_commits(store: Store, tmp_path: Path) -> None:
    other = SQLiteStore.open(tmp_path)  # another connection: sees only what committed
    assert other is not None
    seen: list[tuple[int, bool]] = []
    log = EventLog.of(store)
    assert EventLog.of(store) is log
    stop = log.listen(lambda e: seen.append((e.seq, bool(other.events(R1, after=e.seq - 1)))))
    with store.atomic():
        append(store, R1, EventType.NODE_STARTED, {}, T)
        append(store, R1, EventType.NODE_FINISHED, {}, T)
    with pytest.raises(RuntimeError), store.atomic():
        append(store, R1, EventType.RUN_FINISHED, {}, T)
        raise RuntimeError("rolled back: never published")
    stop()
    append(store, R1, EventType.RUN_FINISHED, {}, T)
    other.close()
    assert seen == [(2, True), (3, True)]


def test_subscribe_replays_then_tails_another_connection_at_its_change_number(
        store: Store, tmp_path: Path) -> None:
    append(store, R1, EventType.NODE_STARTED, {"node": "a"}, T)
    writer = SQLiteStore.open(tmp_path)  # another store object on the same database
    assert writer is not None
    EventLog.of(writer)  # the engine's log: it publishes its commits, wakes its own readers

    def write() -> None:
        append(writer, R1, EventType.NODE_FINISHED, {"node": "a"}, T)

    # A read period far beyond the bound: only the store's change number (SQLite's
    # data_version, which another connection's commit moves) can deliver seq 3.
    got = _take(store, 3, poll_seconds=10 * BOUND, write=write)
    writer.close()
    assert [(e.seq, e.type) for e in got] == [
        (1, "run/started"), (2, "node/started"), (3, "node/finished")]
    assert [e.seq for e in _take(store, 1, after=2, poll_seconds=10 * BOUND)] == [3]


class _Counting:
    """The real store, counting its reads of the log; ``signal`` false: a store that cannot
    tell another connection's commits (no change number)."""

    def __init__(self, store: Store, *, signal: bool = True) -> None:
        self._store, self._signal = store, signal
        self.reads = 0

    def events(self, *args: Any, **kwargs: Any) -> list[Event]:
        self.reads += 1
        return self._store.events(*args, **kwargs)

    def changes(self) -> int | None:
        return self._store.changes() if self._signal else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_commit_through_the_store_wakes_its_readers_without_a_look(store: Store) -> None:
    counting = _Counting(store, signal=False)
    reader: Any = counting

    def write() -> None:  # through the very store object the reader follows
        append(store, R1, EventType.NODE_STARTED, {"node": "a"}, T)

    # No change number and a read period far beyond the bound: only the wake-up of the
    # store's own event log can deliver seq 2.
    got = _take(reader, 2, poll_seconds=10 * BOUND, write=write)
    assert [(e.seq, e.type) for e in got] == [(1, "run/started"), (2, "node/started")]


def test_many_readers_of_a_log_cost_one_read_per_change(store: Store, tmp_path: Path) -> None:
    """Every surface follows the log through one follower per store: five readers of a run
    cost one read of its events per commit, and none while nothing is committed."""
    counting = _Counting(store)
    writer = SQLiteStore.open(tmp_path)  # another connection, as another process's would be
    assert writer is not None

    async def main() -> list[list[int]]:
        reader: Any = counting
        streams = [subscribe(reader, R1, poll_seconds=10 * BOUND) for _ in range(5)]
        got = [[(await anext(s)).seq] for s in streams]  # each has joined: seq 1 replayed
        joined = counting.reads
        EventLog.of(reader).follower.tick()  # a look with nothing committed: no read
        assert counting.reads == joined
        append(writer, R1, EventType.NODE_STARTED, {"node": "a"}, T)
        for s, seen in zip(streams, got, strict=True):
            seen.append((await anext(s)).seq)
            await s.aclose()
        assert counting.reads == joined + 1
        return got

    try:
        got = asyncio.run(asyncio.wait_for(main(), BOUND))
    finally:
        writer.close()
    assert got == [[1, 2]] * 5


def test_subscribe_tails_another_process(store: Store, tmp_path: Path) -> None:
    script = ("import sys; from pathlib import Path; from rein.store.sqlite import SQLiteStore;"
              f" s = SQLiteStore.open(Path({str(tmp_path)!r}));"
              " s.transition('r1', 'node/started', {'node': 'b'}, 'now'); s.close()")

    def write() -> None:
        subprocess.run([sys.executable, "-c", script], check=True, timeout=BOUND)

    got = _take(store, 2, poll_seconds=0.01, write=write)
    assert [(e.seq, e.type, dict(e.payload)) for e in got] == [
        (1, "run/started", {}), (2, "node/started", {"node": "b"})]


def test_subscribe_until_the_run_ends(store: Store) -> None:
    async def main() -> list[Event]:
        return [e async for e in subscribe(store, R1, until_ended=True,
                                           poll_seconds=10 * BOUND)]

    append(store, R1, EventType.RUN_FINISHED, {"status": "succeeded"}, T,
           Transition(run_status=RunStatus.SUCCEEDED, finished_at=T))
    got = asyncio.run(asyncio.wait_for(main(), BOUND))
    assert [e.type for e in got] == ["run/started", "run/finished"]


def test_every_event_type_the_engine_writes_is_in_the_catalogue() -> None:
    """The names the lower layers write (the driver's turns) are catalogue members too."""
    from rein.workers.driver import store as driver_store

    assert {driver_store.INSTRUCTED, driver_store.ANSWERED} <= set(EventType)
    assert len(set(EventType)) == len(EventType)  # one member per type


FIXTURES = Path(__file__).parents[1] / "store" / "fixtures"


@pytest.mark.parametrize("version", sorted(int(p.stem[1:]) for p in FIXTURES.glob("v*.db")))
def test_stores_of_every_released_version_replay_and_take_answers(version: int,
                                                                  tmp_path: Path) -> None:
    """Events written before the event log existed replay, map, and are followed by new
    ones that are published: a migrated store's pending approval answered today."""
    import shutil

    from rein.core.states import ApprovalStatus
    from rein.engine.run.approvals import record_answer

    copy = tmp_path / "rein.db"
    shutil.copy(FIXTURES / f"v{version}.db", copy)
    old = SQLiteStore(copy)
    try:
        run = RunId("run-fixture-1")

        async def replay() -> list[Event]:
            return [e async for e in subscribe(old, run, until_ended=True)]

        assert asyncio.run(asyncio.wait_for(replay(), BOUND)) == old.events(run)
        fold = Feed(thread_id=run, turn_id="turn-1", cwd=str(tmp_path), input=[])
        assert all(isinstance(fold.apply(e), list) for e in old.events(run))
        seen: list[Event] = []
        EventLog.of(old).listen(seen.append)
        [pending] = old.approvals(status=ApprovalStatus.PENDING)
        record_answer(old, pending, ApprovalStatus.ACCEPTED, {"actor": "ann"}, T)
        assert [(e.type, e.payload["approval_id"]) for e in seen] == [
            ("approval/answered", "apv-fixture-1")]
        assert seen == old.events(pending.run_id)[-1:]
    finally:
        old.close()
