"""One watcher of the store per console, fanning each run's new events out to every tab.

Each tab following a run used to read the store on its own every 0.25 s: twenty tabs were
twenty queries a poll, and an event committed by another process waited up to a poll to
show. Here one task per console watches the store and reads a run's new events once per
change, whatever the number of tabs on it.

How it learns of a change, cheaply:

- a commit in this process (the console's own Harness, its Steering lanes) calls
  :meth:`Hub.wake` at once;
- a commit by another process changes SQLite's ``PRAGMA data_version`` on the watcher's
  connection, asked every :data:`INTERVAL` seconds (microseconds each; no table is read);
- PostgreSQL's change number is the count of ``NOTIFY`` messages its store sends with each
  commit that appended events; a store with no change number at all is read every
  :data:`FALLBACK` seconds, still once per run and not once per tab.

The runs list waits on the same watcher (:meth:`Hub.next_change`) instead of reading the
store every second per tab.

Exactness: a tab's catch-up read (the events after its ``Last-Event-ID``) and its joining
the watch happen with no ``await`` between them, and each subscriber keeps its own position,
so every event reaches every tab exactly once and in ``seq`` order. A run that ended sends
its last events, then the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from rein.core.frozen import Record, field
from rein.core.ids import RunId
from rein.errors import ReinError
from rein.store.base import Event, Store

INTERVAL = 0.01  # seconds between two looks at the change number (SQLite)
FALLBACK = 0.1  # seconds between two reads of each watched run, for a store without one
END = None  # what a subscriber's queue holds after the run's last event


class _Subscriber(Record, kw_only=False, eq=False):
    pos: int  # the last seq this subscriber has been handed
    queue: asyncio.Queue[Event | None] = field(default_factory=asyncio.Queue)


class _Watch(Record, kw_only=False, eq=False):
    run_id: str
    subscribers: list[_Subscriber] = field(default_factory=list)


class Hub:
    """The console's one watcher of ``store``; :meth:`follow` is a tab's feed of a run."""

    def __init__(self, store: Store, *, interval: float = INTERVAL,
                 fallback: float = FALLBACK) -> None:
        self.store = store
        self._watches: dict[str, _Watch] = {}
        version: Callable[[], int] | None = getattr(store, "data_version", None)
        self._version = version
        self._seen = version() if version is not None else None
        self._period = interval if version is not None else fallback
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing = False  # the last look failed: said once on stderr, not each time
        self.version = 0  # counts the changes seen: the runs list waits for the next one
        self._waiting: list[asyncio.Future[None]] = []

    # -- waking ---------------------------------------------------------------------------

    def wake(self, *_: Any) -> None:
        """A commit happened (any thread): look now rather than at the next interval."""
        loop, woken = self._loop, self._woken
        if loop is None or woken is None or woken.is_set():
            return  # not watching yet, or a look is already due: one wake is enough
        with contextlib.suppress(RuntimeError):  # the loop has closed
            loop.call_soon_threadsafe(woken.set)

    def changed(self) -> bool:
        """Whether another connection committed since the last look (always, without a
        change number: the fallback reads every time)."""
        if self._version is None:
            return True
        now = self._version()
        if now == self._seen:
            return False
        self._seen = now
        return True

    # -- the feed -------------------------------------------------------------------------

    async def follow(self, run_id: str, after: int = 0) -> AsyncIterator[Event]:
        """The run's events with ``seq > after``, then new ones as they commit, until the
        run ends (at once for a run that had ended)."""
        self._attach()
        run = self.store.get_run(run_id)
        ended = run is None or run.status.terminal  # before the events: see _fetch
        backlog = self.store.events(RunId(run_id), after=after)
        sub = _Subscriber(pos=backlog[-1].seq if backlog else after)
        if not ended:
            # Joined before the first yield: whatever the watch reads from now on that this
            # subscriber has not had reaches its queue.
            self._watches.setdefault(run_id, _Watch(run_id)).subscribers.append(sub)
            self._start()
        try:
            for event in backlog:
                yield event
            if ended:
                return
            while True:
                item = await sub.queue.get()
                if item is END:
                    return
                yield item
        finally:
            watch = self._watches.get(run_id)
            if watch is not None and sub in watch.subscribers:
                watch.subscribers.remove(sub)
                if not watch.subscribers:
                    del self._watches[run_id]

    def tick(self, *, woken: bool = False) -> int:
        """One look: when something changed (or ``woken``), read each watched run's new
        events once and hand them to its subscribers. The number of runs read."""
        if not self.changed() and not woken:
            return 0
        self.version += 1
        for waiting in self._waiting:
            if not waiting.done():
                waiting.set_result(None)
        self._waiting.clear()
        read = 0
        for watch in list(self._watches.values()):
            if watch.subscribers:
                self._fetch(watch)
                read += 1
        return read

    def _fetch(self, watch: _Watch) -> None:
        start = min(s.pos for s in watch.subscribers)
        batch = self.store.events(RunId(watch.run_id), after=start)
        ended = False
        if any(e.type.startswith("run/") for e in batch):
            # Only a run/ event can end a run. Its status and its last event commit together,
            # so once the status says ended, one more read has every event it will have.
            run = self.store.get_run(watch.run_id)
            ended = run is None or run.status.terminal
            if ended:
                batch += self.store.events(RunId(watch.run_id), after=batch[-1].seq)
        for sub in watch.subscribers:
            for event in batch:
                if event.seq > sub.pos:
                    sub.queue.put_nowait(event)
                    sub.pos = event.seq
            if ended:
                sub.queue.put_nowait(END)
        if ended:
            self._watches.pop(watch.run_id, None)

    async def next_change(self, seen: int, timeout: float) -> int:
        """:attr:`version` once it is past ``seen`` (something was committed), or after
        ``timeout`` seconds, whichever comes first."""
        self._attach()
        if self.version != seen:
            return self.version
        assert self._loop is not None
        waiting: asyncio.Future[None] = self._loop.create_future()
        self._waiting.append(waiting)
        self._start()
        try:
            await asyncio.wait_for(waiting, timeout)
        except TimeoutError:
            pass
        finally:
            if waiting in self._waiting:
                self._waiting.remove(waiting)
        return self.version

    # -- the watcher task -----------------------------------------------------------------

    def _attach(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or a new serving loop (tests)
            self._loop, self._woken, self._task = loop, asyncio.Event(), None

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        woken = self._woken
        assert woken is not None
        while self._watches or self._waiting:
            try:
                await asyncio.wait_for(woken.wait(), self._period)
                hit = True
            except TimeoutError:
                hit = False
            woken.clear()
            try:
                self.tick(woken=hit)
            except ReinError as exc:
                # The store could not be read this time (a lost connection, a locked file):
                # the tabs keep their positions and the next look tries again.
                if not self._failing:
                    print(f"rein serve: {exc.code}: {exc.message}", file=sys.stderr, flush=True)
                self._failing = True
                await asyncio.sleep(FALLBACK)
                woken.set()  # the change it saw may be unread: read again, changed or not
            else:
                self._failing = False


__all__ = ["Hub"]
