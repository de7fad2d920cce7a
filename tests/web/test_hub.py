"""The console's one watcher of the store: many tabs on a run cost one read per change, a
change made through another connection (another process) is found by SQLite's change
number, and every tab gets exactly the events after the point it joined, once, in order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from rein.core.states import ApprovalStatus
from rein.engine.follow import Follower as Hub
from rein.engine.service import Harness
from rein.store.base import Event
from tests.store.conftest import pg_url  # noqa: F401  (the fixture)


class CountingStore:
    """The real store, counting the reads the hub makes of it."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.reads: list[str] = []

    def events(self, *args: Any, **kwargs: Any) -> Any:
        self.reads.append("events")
        return self._store.events(*args, **kwargs)

    def get_run(self, *args: Any, **kwargs: Any) -> Any:
        self.reads.append("get_run")
        return self._store.get_run(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


async def _started(h: Harness) -> str:
    prepared = await h.prepare("g.agraph.yaml", given={})
    outcome = await h.start(prepared, approved=prepared.digest)
    assert outcome.status.value == "awaiting_human"
    return str(outcome.run_id)


async def _answer(h: Harness, run_id: str, **values: Any) -> None:
    (row,) = h.approvals(run_id=run_id)
    await h.answer(row.approval_id, ApprovalStatus.ACCEPTED, digest=row.digest,
                   values=values or None)


async def _joined(hub: Hub, run_id: str, after: int) -> tuple[AsyncIterator[Event], Event]:
    """A follower that has joined: its first event (the one after ``after``) is read, so
    it is in the watch."""
    feed = hub.follow(run_id, after)
    return feed, await anext(feed)


async def _scenario(workspace: Path, tabs: int, store_url: str | None = None
                    ) -> dict[str, Any]:
    writer = Harness.open(workspace, store_url=store_url)  # another connection, as another
    reader = Harness.open(workspace, store_url=store_url)  # process's would be
    try:
        run_id = await _started(writer)
        stored = [e.seq for e in reader.store.events(run_id)]
        store = CountingStore(reader.store)
        hub = Hub(store, interval=3600)  # looks only when told to: the test drives tick()
        joined = [await _joined(hub, run_id, stored[-2 - (i % 3)]) for i in range(tabs)]
        store.reads.clear()
        assert hub.tick() == 0 and store.reads == []  # nothing committed: no table read

        await _answer(writer, run_id)  # the run goes on to the next gate
        assert hub.tick() == 1
        reads_per_change = list(store.reads)

        await _answer(writer, run_id, count=3)  # the run ends
        hub.tick()
        every = [e.seq for e in reader.store.events(run_id)]
        feeds = []
        for i, (feed, first) in enumerate(joined):
            got = [first.seq] + [e.seq async for e in feed]  # ends after the run's end
            after = stored[-2 - (i % 3)]
            assert got == [s for s in every if s > after], f"tab {i}"
            feeds.append(got)
        return {"reads": reads_per_change, "feeds": feeds, "end": every[-1]}
    finally:
        reader.close()
        writer.close()


def test_twenty_tabs_cost_what_one_tab_costs(workspace: Path) -> None:
    one = asyncio.run(_scenario(workspace, 1))
    (workspace / ".rein").rename(workspace / ".rein-one")
    twenty = asyncio.run(_scenario(workspace, 20))
    # One read of the run's events per change (and of its status when a run/ event
    # came), whatever the number of tabs.
    assert one["reads"] == twenty["reads"]
    assert twenty["reads"].count("events") == 1
    assert len(twenty["reads"]) <= 2


def test_on_postgresql_a_commit_elsewhere_is_heard_by_listen_notify(
        workspace: Path, pg_url: str) -> None:  # noqa: F811
    got = asyncio.run(_scenario(workspace, 5, store_url=pg_url))
    assert got["reads"].count("events") == 1  # found by its notification, read once


def test_a_tab_joining_after_another_gets_exactly_the_events_after_its_point(
        workspace: Path) -> None:
    async def scenario() -> None:
        h = Harness.open(workspace)
        try:
            run_id = await _started(h)
            hub = Hub(h.store, interval=3600)
            early, first = await _joined(hub, run_id, 0)
            await _answer(h, run_id)
            hub.tick(woken=True)  # the same connection: only a wake tells of its commits
            middle = h.store.events(run_id)[-3].seq
            late, late_first = await _joined(hub, run_id, middle)
            await _answer(h, run_id, count=3)
            hub.tick(woken=True)
            every = [e.seq for e in h.store.events(run_id)]
            assert [first.seq] + [e.seq async for e in early] == every
            assert [late_first.seq] + [e.seq async for e in late] == every[every.index(middle)
                                                                             + 1:]
        finally:
            h.close()

    asyncio.run(scenario())


def test_a_run_that_had_ended_is_replayed_and_closed(workspace: Path) -> None:
    async def scenario() -> None:
        h = Harness.open(workspace)
        try:
            run_id = await _started(h)
            await _answer(h, run_id)
            await _answer(h, run_id, count=2)
            hub = Hub(h.store, interval=3600)
            got = [e.seq async for e in hub.follow(run_id, 4)]
            assert got == [e.seq for e in h.store.events(run_id, after=4)]
            assert hub.tick(woken=True) == 0  # nothing left to watch
        finally:
            h.close()

    asyncio.run(scenario())


def test_a_failed_read_is_said_once_and_read_again(workspace: Path,
                                                    capsys: Any) -> None:
    from rein.errors import StoreError

    async def scenario() -> None:
        writer, reader = Harness.open(workspace), Harness.open(workspace)
        try:
            run_id = await _started(writer)

            class Flaky(CountingStore):
                fail = 0

                def events(self, *args: Any, **kwargs: Any) -> Any:
                    if self.fail:
                        self.fail -= 1
                        raise StoreError("the store is away", code="STORE001")
                    return super().events(*args, **kwargs)

            store = Flaky(reader.store)
            hub = Hub(store, interval=0.001)
            last = reader.store.events(run_id)[-1].seq
            feed, _first = await _joined(hub, run_id, last - 1)
            store.fail = 2  # the next two reads fail
            await _answer(writer, run_id)
            # The watcher task says it once, then reads the change it saw again.
            nxt = await asyncio.wait_for(anext(feed), 30)
            assert nxt.seq == last + 1
            await feed.aclose()
        finally:
            reader.close()
            writer.close()

    asyncio.run(scenario())
    err = capsys.readouterr().err
    assert err.count("rein: STORE001: the store is away") == 1


def test_the_runs_list_waits_for_the_next_change_instead_of_polling(workspace: Path) -> None:
    async def scenario() -> None:
        writer, reader = Harness.open(workspace), Harness.open(workspace)
        try:
            store = CountingStore(reader.store)
            hub = Hub(store, interval=3600)
            seen = hub.version
            waiting = asyncio.create_task(hub.next_change(seen, 60))
            await asyncio.sleep(0)  # let it start waiting: one turn of the loop, no time
            assert not waiting.done() and hub.tick() == 0  # nothing committed yet
            run_id = await _started(writer)  # another connection commits
            hub.tick()
            assert await waiting == seen + 1
            assert store.reads == []  # the runs list is told; it reads the store itself
            assert await hub.next_change(seen, 60) == seen + 1  # already past: at once
            assert run_id
        finally:
            reader.close()
            writer.close()

    asyncio.run(scenario())
