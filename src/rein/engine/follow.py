"""Following the event log: one follower per store object, whatever the number of readers.

:func:`rein.engine.events.subscribe` (``Harness.follow``) hands every reader of a log to the
:class:`Follower` of the store it reads through: the app-server's and ACP's turns, the SDK,
``rein runs watch`` and every tab of the web console. A follower reads a log's new events
once per change, whatever the number of its readers, and reads nothing while nothing
changed.

How it learns of a change, cheaply:

- a commit through the same store object (this process's engine, a turn's answer) reaches
  the store's :class:`~rein.engine.events.EventLog`, which calls :meth:`Follower.wake`;
- a commit through any other connection (another process, or another store object of this
  one) changes the store's change number (:meth:`rein.store.base.Events.changes`: SQLite's
  ``PRAGMA data_version``, PostgreSQL's count of ``NOTIFY`` messages), asked every
  :data:`INTERVAL` seconds (microseconds each; no table is read);
- a store with no change number at all is read every :data:`FALLBACK` seconds (or sooner, as
  a reader asks), still once per log and not once per reader.

A reader that waits for any change (the console's runs list) waits on
:meth:`Follower.next_change` instead of reading the store on a timer.

Exactness: a reader's catch-up read (the events after its position) and its joining the
watch happen with no ``await`` between them, and each reader keeps its own position, so
every event reaches every reader exactly once and in ``seq`` order. A reader that follows
a run until it ends gets its last events, then the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncGenerator

from rein.core.frozen import Record, field
from rein.core.ids import RunId
from rein.core.loops import within
from rein.errors import ReinError
from rein.store.base import Event, Store

INTERVAL = 0.01  # seconds between two looks at the change number
FALLBACK = 0.25  # seconds between two reads of each followed log, for a store without one
END = None  # what a reader's queue holds after the run's last event


class _Reader(Record, kw_only=False, eq=False):
    pos: int  # the last seq this reader has been handed
    until_ended: bool  # its feed ends with the run
    period: float  # how often it wants a store without a change number read
    queue: asyncio.Queue[Event | None] = field(default_factory=asyncio.Queue)


class _Watch(Record, kw_only=False, eq=False):
    log_id: str
    readers: list[_Reader] = field(default_factory=list)


class Follower:
    """The one follower of ``store``'s event log; :meth:`follow` is one reader's feed."""

    def __init__(self, store: Store, *, interval: float = INTERVAL,
                 fallback: float = FALLBACK) -> None:
        self.store = store
        self._watches: dict[str, _Watch] = {}
        self._seen = store.changes()
        self._signal = self._seen is not None
        self._interval, self._fallback = interval, fallback
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing = False  # the last look failed: said once on stderr, not each time
        self.version = 0  # counts the changes seen: a reader of "anything" waits for the next
        self._waiting: list[asyncio.Future[None]] = []

    # -- waking ---------------------------------------------------------------------------

    def wake(self, *_: object) -> None:
        """A commit happened (any thread): look now rather than at the next interval."""
        loop, woken = self._loop, self._woken
        if loop is None or woken is None or woken.is_set():
            return  # not following yet, or a look is already due: one wake is enough
        with contextlib.suppress(RuntimeError):  # the loop has closed
            loop.call_soon_threadsafe(woken.set)

    def changed(self) -> bool:
        """Whether another connection committed since the last look (always, without a
        change number: the fallback reads every time)."""
        if not self._signal:
            return True
        now = self.store.changes()
        if now == self._seen:
            return False
        self._seen = now
        return True

    # -- the feed -------------------------------------------------------------------------

    async def follow(self, log_id: str, after: int = 0, *, until_ended: bool = True,
                     period: float | None = None) -> AsyncGenerator[Event, None]:
        """The log's events with ``seq > after``, then new ones as they commit; with
        ``until_ended``, until the run ends (at once for a run that had ended, or a log
        that is no run's). ``period``: how often a store without a change number is read
        for this reader at most (:data:`FALLBACK` otherwise)."""
        self._attach()
        ended = False
        if until_ended:  # the status before the events: see _fetch
            run = self.store.get_run(log_id)
            ended = run is None or run.status.terminal
        backlog = self.store.events(RunId(log_id), after=after)
        reader = _Reader(pos=backlog[-1].seq if backlog else after, until_ended=until_ended,
                         period=self._fallback if period is None else period)
        if not ended:
            # Joined before the first yield: whatever the watch reads from now on that this
            # reader has not had reaches its queue.
            self._watches.setdefault(log_id, _Watch(log_id)).readers.append(reader)
            self._start()
        try:
            for event in backlog:
                yield event
            if ended:
                return
            while True:
                item = await reader.queue.get()
                if item is END:
                    return
                yield item
        finally:
            watch = self._watches.get(log_id)
            if watch is not None and reader in watch.readers:
                watch.readers.remove(reader)
                if not watch.readers:
                    del self._watches[log_id]

    def tick(self, *, woken: bool = False) -> int:
        """One look: when something changed (or ``woken``), read each followed log's new
        events once and hand them to its readers. The number of logs read."""
        if not self.changed() and not woken:
            return 0
        self.version += 1
        for waiting in self._waiting:
            if not waiting.done():
                waiting.set_result(None)
        self._waiting.clear()
        read = 0
        for watch in list(self._watches.values()):
            if watch.readers:
                self._fetch(watch)
                read += 1
        return read

    def _fetch(self, watch: _Watch) -> None:
        start = min(r.pos for r in watch.readers)
        batch = self.store.events(RunId(watch.log_id), after=start)
        ended = False
        if any(r.until_ended for r in watch.readers) and \
                any(e.type.startswith("run/") for e in batch):
            # Only a run/ event can end a run. Its status and its last event commit together,
            # so once the status says ended, one more read has every event it will have.
            run = self.store.get_run(watch.log_id)
            ended = run is None or run.status.terminal
            if ended:
                batch += self.store.events(RunId(watch.log_id), after=batch[-1].seq)
        for reader in watch.readers:
            for event in batch:
                if event.seq > reader.pos:
                    reader.queue.put_nowait(event)
                    reader.pos = event.seq
            if ended and reader.until_ended:
                reader.queue.put_nowait(END)
        if ended:
            watch.readers = [r for r in watch.readers if not r.until_ended]
            if not watch.readers:
                self._watches.pop(watch.log_id, None)

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
            await within(waiting, timeout)
        except TimeoutError:
            pass
        finally:
            if waiting in self._waiting:
                self._waiting.remove(waiting)
        return self.version

    # -- the watcher task -----------------------------------------------------------------

    def _attach(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or a new loop (a sync wrapper's, a test's)
            self._loop, self._woken, self._task = loop, asyncio.Event(), None
            # Readers of a loop that has gone cannot be handed anything any more.
            self._watches.clear()
            self._waiting.clear()

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._watch())

    def _period(self) -> float:
        if self._signal:
            return self._interval
        periods = [r.period for w in self._watches.values() for r in w.readers]
        return min([self._fallback, *periods])

    async def _watch(self) -> None:
        woken = self._woken
        assert woken is not None
        while self._watches or self._waiting:
            with contextlib.suppress(TimeoutError):
                await within(woken.wait(), self._period())
            # Whether a wake came, read from the flag: one that lands while a timed-out wait
            # is being cancelled sets it all the same, and clearing it must not lose it.
            hit = woken.is_set()
            woken.clear()
            if not (self._watches or self._waiting):  # the last reader left meanwhile (and
                break  # its store may be closed): nothing to read for
            try:
                self.tick(woken=hit)
            except ReinError as exc:
                # The store could not be read this time (a lost connection, a locked file):
                # the readers keep their positions and the next look tries again.
                if not self._failing:
                    print(f"rein: {exc.code}: {exc.message}", file=sys.stderr, flush=True)
                self._failing = True
                await asyncio.sleep(self._fallback)
                woken.set()  # the change it saw may be unread: read again, changed or not
            else:
                self._failing = False


__all__ = ["END", "FALLBACK", "INTERVAL", "Follower"]
