"""The event log: one append, publication after commit, the catalogue, subscribe (replay,
then tail, in-process and across processes) and the thread / turn / item mapping."""

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
from rein.engine.events import EventLog, EventType, append, notifications, subscribe
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


def test_subscribe_replays_then_tails_in_process_without_polling(store: Store,
                                                                  tmp_path: Path) -> None:
    append(store, R1, EventType.NODE_STARTED, {"node": "a"}, T)
    writer = SQLiteStore.open(tmp_path)  # another store object on the same database
    assert writer is not None
    EventLog.of(writer)  # the engine's log: what publishes its commits in this process

    def write() -> None:
        append(writer, R1, EventType.NODE_FINISHED, {"node": "a"}, T)

    # A poll interval far beyond the bound: only the in-process wake-up can deliver seq 3.
    got = _take(store, 3, poll_seconds=10 * BOUND, write=write)
    writer.close()
    assert [(e.seq, e.type) for e in got] == [
        (1, "run/started"), (2, "node/started"), (3, "node/finished")]
    assert [e.seq for e in _take(store, 1, after=2, poll_seconds=10 * BOUND)] == [3]


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


def _event(seq: int, type_: str, **payload: Any) -> Event:
    return Event(run_id=R1, seq=seq, type=type_, payload=payload, at=T)


def test_runs_nodes_and_attempts_read_as_threads_turns_and_items() -> None:
    trace = [
        _event(1, "run/started", graph_id="g"),
        _event(2, "node/started", node="a", status="running"),
        _event(3, "attempt/started", node="a", status="running", attempt=1),
        _event(4, "item", node="a", attempt=1, kind="message", data={"text": "hi"}),
        _event(5, "attempt/finished", node="a", status="running", attempt=1,
               result="succeeded"),
        _event(6, "edge/resolved", scope="", **{"from": "a", "to": "b"}),
        _event(7, "node/finished", node="a", status="succeeded"),
        _event(8, "approval/answered", approval_id="apv-1", key="gate:b", status="accepted"),
        _event(9, "run/finished", status="succeeded"),
    ]
    out = [n.to_json() for e in trace for n in notifications(e)]
    assert [n["method"] for n in out] == [
        "thread/started", "turn/started", "item/started", "item/agentMessage/delta",
        "item/completed", "turn/completed", "serverRequest/resolved",
        "thread/status/changed", "thread/closed"]
    started, delta, completed = out[2], out[3], out[4]
    assert started["params"]["item"]["id"] == delta["params"]["itemId"] == \
        completed["params"]["item"]["id"] == "r1/a#1"
    assert (started["params"]["turnId"], completed["params"]["item"]["status"]) == (
        "r1/a", "completed")
    assert delta["params"]["delta"] == "hi"
    assert out[5]["params"]["turn"] == {"id": "r1/a", "status": "completed", "completedAt": T}
    assert out[6]["params"] == {"threadId": "r1", "requestId": "apv-1"}
    assert notifications(trace[3]) == notifications(trace[3])  # pure


def test_every_event_type_the_engine_writes_is_in_the_catalogue() -> None:
    """The names the lower layers write (the driver's turns) are catalogue members too."""
    from rein.workers import driver_store

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
    from rein.engine.approvals import record_answer

    copy = tmp_path / "rein.db"
    shutil.copy(FIXTURES / f"v{version}.db", copy)
    old = SQLiteStore(copy)
    try:
        run = RunId("run-fixture-1")

        async def replay() -> list[Event]:
            return [e async for e in subscribe(old, run, until_ended=True)]

        assert asyncio.run(asyncio.wait_for(replay(), BOUND)) == old.events(run)
        assert all(isinstance(notifications(e), tuple) for e in old.events(run))
        seen: list[Event] = []
        EventLog.of(old).listen(seen.append)
        [pending] = old.approvals(status=ApprovalStatus.PENDING)
        record_answer(old, pending, ApprovalStatus.ACCEPTED, {"actor": "ann"}, T)
        assert [(e.type, e.payload["approval_id"]) for e in seen] == [
            ("approval/answered", "apv-fixture-1")]
        assert seen == old.events(pending.run_id)[-1:]
    finally:
        old.close()
