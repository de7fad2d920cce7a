"""Where the console's runs advance: a few lanes, each a thread with its own loop and Harness.

A run started from the plan view, or continued by an answer, goes on in the server process
after the HTTP response has been sent, and whether or not a tab is open: the work is in the
store, the browser only watches it. Advancing a run is long and mostly synchronous (the
store, commands, a model's tools), so it happens here, off the loop that serves pages and
event streams; that loop keeps its own Harness for reads.

Several runs advance at once, up to :data:`MAX_LANES`: a job goes to an idle lane (one is
opened when all are busy, up to the bound), else waits in the least busy one. Jobs of one
run go to the lane already busy with that run, one after another: the engine's run lock
keeps other processes out, but it is re-entrant within this one, so the console itself
keeps two lanes from advancing one run. A run another process holds is refused by the
Harness (RUN_LOCKED), as on the command line.

The web surface decides nothing: an answer or a cancel is one call of the Harness, run on
the lane's loop as it is (the lane decides where and when it runs, it is not a step of it),
and the Harness refuses what it would refuse on the command line (stale digests, RT053, a
locked run).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import sys
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from rein.core.loops import new_loop
from rein.core.states import ApprovalStatus
from rein.engine.service import Event, Harness

T = TypeVar("T")
OpenHarness = Callable[[list[Callable[[Event], None]]], Harness]
Job = Callable[[Harness], Coroutine[Any, Any, T]]  # one Harness call, as a rule
MAX_LANES = 4  # runs the console advances at once; more wait for a free lane


class _Lane:
    """One advancing thread: its loop, its Harness, and the jobs it has, run one at a time
    in the order given (the next starts when the one before it has ended)."""

    def __init__(self, steering: Steering, open_harness: OpenHarness, index: int) -> None:
        self.steering = steering
        self.loop = new_loop()
        self.queue: collections.deque[tuple[Job[Any], concurrent.futures.Future[Any]]] = \
            collections.deque()
        self.busy = False  # a job runs on the loop now
        self.pending = 0  # jobs given to this lane and not done
        self.runs: collections.Counter[str] = collections.Counter()  # their runs
        self.naming: concurrent.futures.Future[str] | None = None  # a start awaiting its id
        self.harness = open_harness([self._heard])
        self.thread = threading.Thread(target=self.loop.run_forever,
                                       name=f"rein-web-runs-{index}", daemon=True)
        self.thread.start()

    def _heard(self, event: Event) -> None:
        for hook in list(self.steering.heard):
            hook(event)
        # The first run/started of a top-level run in this lane after a start began names
        # that run: the lane runs one job at a time.
        naming = self.naming
        if (naming is not None and event.type == "run/started"
                and "parent_run_id" not in event.payload and not naming.done()):
            with self.steering.mutex:
                self.runs[event.run_id] += 1
            self.steering.named[naming] = event.run_id
            naming.set_result(event.run_id)

    def submit(self, job: Job[T]) -> concurrent.futures.Future[T]:
        """``job`` after the jobs given before it: its result (or its exception) once run."""
        done: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self.steering.mutex:
            self.queue.append((job, done))
            idle, self.busy = not self.busy, True
        if idle:
            self._next()
        return done

    def _next(self) -> None:
        """Start the first job waiting, if any; its end starts the next one. The job's
        coroutine runs on the loop as it is, a task of its own: the Harness call an answer
        is runs from the loop, not from inside this lane."""
        with self.steering.mutex:
            if not self.queue:
                self.busy = False
                return
            job, done = self.queue.popleft()
        step = None
        try:
            step = job(self.harness)
            running = asyncio.run_coroutine_threadsafe(step, self.loop)
        except Exception as exc:  # noqa: BLE001 - the job's own failure, handed back
            if step is not None:
                step.close()  # never started: no warning that it was not awaited
            done.set_exception(exc)
            self._next()
            return

        def ended(f: concurrent.futures.Future[Any]) -> None:
            error = None if f.cancelled() else f.exception()
            if f.cancelled():
                done.cancel()
            elif error is not None:
                done.set_exception(error)
            else:
                done.set_result(f.result())
            self._next()

        running.add_done_callback(ended)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.harness.close()
        self.loop.close()


class Steering:
    """The console's advancing lanes. :meth:`close` waits for the jobs under way."""

    def __init__(self, open_harness: OpenHarness, *, lanes: int = MAX_LANES) -> None:
        self._open = open_harness
        self._max = max(1, lanes)
        self.mutex = threading.Lock()
        self._lanes: list[_Lane] = []
        self._outstanding: set[concurrent.futures.Future[Any]] = set()
        self.named: dict[concurrent.futures.Future[str], str] = {}
        self.heard: list[Callable[[Event], None]] = []  # told of every event the lanes commit
        self.failures: list[BaseException] = []  # what background advances raised, for logs
        self._lane_for(None)  # one lane from the start: a bad store fails here, not later

    def _lane_for(self, run_id: str | None) -> _Lane:
        with self.mutex:
            if run_id is not None:
                for lane in self._lanes:
                    if lane.runs[run_id]:
                        return lane  # after the job that advances this run now
            for lane in self._lanes:
                if lane.pending == 0:
                    return lane
            if len(self._lanes) < self._max:
                self._lanes.append(_Lane(self, self._open, len(self._lanes)))
                return self._lanes[-1]
            return min(self._lanes, key=lambda lane: lane.pending)

    def _submit(self, job: Job[T], *, run_id: str | None = None,
                lane: _Lane | None = None) -> concurrent.futures.Future[T]:
        lane = lane or self._lane_for(run_id)
        with self.mutex:
            lane.pending += 1
            if run_id is not None:
                lane.runs[run_id] += 1
        future = lane.submit(job)
        with self.mutex:
            self._outstanding.add(future)

        def done(f: concurrent.futures.Future[Any]) -> None:
            with self.mutex:
                lane.pending -= 1
                if run_id is not None:
                    lane.runs[run_id] -= 1
                self._outstanding.discard(f)

        future.add_done_callback(done)
        return future

    def _background(self, future: concurrent.futures.Future[Any],
                    answered: concurrent.futures.Future[Any]) -> None:
        def done(f: concurrent.futures.Future[Any]) -> None:
            error = None if f.cancelled() else f.exception()
            # A failure before ``answered`` was set is the refusal the page shows instead.
            if error is not None and answered.done():
                # The page that asked has its answer already; the server's terminal is
                # where an advance that failed afterwards is told.
                self.failures.append(error)
                code = getattr(error, "code", type(error).__name__)
                print(f"rein serve: {code}: {error}", file=sys.stderr, flush=True)

        future.add_done_callback(done)

    async def start(self, path: str, *, digest: str, given: Mapping[str, Any],
                    raw: frozenset[str] = frozenset(), session: str | None = None) -> str:
        """Prepare and start ``path`` with the parameters ``given`` (those in ``raw`` are
        text to coerce, as ``rein run --param`` gives them), approved as ``digest``; the
        new run's id as soon as it exists (the run goes on here). PrepareFailed (AG301,
        AG302, ...) or APPROVAL_STALE, with nothing written, when the file or the
        parameters are not what can run. ``session``: the console session that approved
        it (its id: the record keeps only a digest of it)."""
        named: concurrent.futures.Future[str] = concurrent.futures.Future()
        lane = self._lane_for(None)

        async def job(h: Harness) -> Any:
            prepared = await h.prepare(path, given=given, raw=raw)
            lane.naming = named
            try:
                return await h.start(prepared, approved=digest, via=h.via(session=session))
            finally:
                lane.naming = None
                run_id = self.named.pop(named, None)
                if run_id is not None:
                    with self.mutex:
                        lane.runs[run_id] -= 1

        running = self._submit(job, lane=lane)
        self._background(running, named)
        return await _first(named, running)

    async def answer(self, approval_id: str, status: ApprovalStatus, *, digest: str,
                     note: str | None, values: Mapping[str, Any],
                     run_id: str | None = None, session: str | None = None) -> str:
        """Record an answer bound to ``digest``, given in the console ``session``; the run
        (``run_id``, its top-level run) continues here afterwards. What was recorded, in
        words, once it is recorded."""
        recorded: concurrent.futures.Future[str] = concurrent.futures.Future()

        running = self._submit(lambda h: h.answer(
            approval_id, status, digest=digest, note=note or None, values=values,
            recorded=recorded.set_result, via=h.via(session=session)), run_id=run_id)
        self._background(running, recorded)
        return await _first(recorded, running)

    async def cancel(self, run_id: str, *, top: str | None = None) -> str:
        """Cancel ``run_id`` (``top``: its top-level run, whose lane it waits in)."""
        outcome = await asyncio.wrap_future(self._submit(
            lambda h: h.cancel(run_id, note="cancelled from the web console"),
            run_id=top or run_id))
        return str(outcome.status.value)

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until the jobs asked so far are done (tests, shutdown)."""
        with self.mutex:
            waiting = list(self._outstanding)
        _done, not_done = concurrent.futures.wait(waiting, timeout)
        return not not_done

    def close(self) -> None:
        self.idle()
        for lane in self._lanes:
            lane.close()


async def _first(value: concurrent.futures.Future[T],
                 running: concurrent.futures.Future[Any]) -> T:
    """``value`` once set; the job's exception when it fails first (a refusal)."""
    wrapped_value, wrapped_job = asyncio.wrap_future(value), asyncio.wrap_future(running)
    await asyncio.wait({wrapped_value, wrapped_job}, return_when=asyncio.FIRST_COMPLETED)
    if wrapped_value.done():
        if not wrapped_job.done():
            # The job goes on; its failure is logged by _background, not raised here.
            wrapped_job.add_done_callback(lambda f: f.exception() if not f.cancelled() else None)
        return wrapped_value.result()
    wrapped_job.result()  # raises the refusal
    wrapped_value.cancel()
    raise RuntimeError("the job ended without naming its result")


__all__ = ["Steering"]

