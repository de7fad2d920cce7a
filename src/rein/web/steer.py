"""Where the console's runs advance: one thread with its own event loop and Harness.

A run started from the plan view, or continued by an answer, goes on in the server process
after the HTTP response has been sent, and whether or not a tab is open: the work is in the
store, the browser only watches it. Advancing a run is long and mostly synchronous (the
store, commands, a model's tools), so it happens here, off the loop that serves pages and
event streams; that loop keeps its own Harness for reads. Jobs run one at a time, in the
order asked: the engine's run lock is per run, and one advancing thread keeps a console from
contending with itself.

The web surface decides nothing: each job is one call of the Harness, and the Harness
refuses what it would refuse on the command line (stale digests, RT053, a locked run).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from rein.core.states import ApprovalStatus
from rein.engine.service import Harness
from rein.store.base import Event

T = TypeVar("T")
OpenHarness = Callable[[list[Callable[[Event], None]]], Harness]


class Steering:
    """The console's one advancing thread. :meth:`close` waits for the current job."""

    def __init__(self, open_harness: OpenHarness) -> None:
        self._loop = asyncio.new_event_loop()
        self._started: list[concurrent.futures.Future[str]] = []  # starts awaiting a run id
        self._lock: asyncio.Lock | None = None
        self._harness = open_harness([self._heard])
        self._thread = threading.Thread(target=self._loop.run_forever, name="rein-web-runs",
                                        daemon=True)
        self._thread.start()
        self.failures: list[BaseException] = []  # what background advances raised, for logs

    def _heard(self, event: Event) -> None:
        # The first run/started of a top-level run after a start was asked names that run.
        if event.type == "run/started" and "parent_run_id" not in event.payload:
            while self._started:
                waiting = self._started.pop(0)
                if not waiting.done():
                    waiting.set_result(event.run_id)
                    return

    def _submit(self, job: Callable[[Harness], Awaitable[T]]) -> concurrent.futures.Future[T]:
        async def one() -> T:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                return await job(self._harness)

        return asyncio.run_coroutine_threadsafe(one(), self._loop)

    def _background(self, future: concurrent.futures.Future[Any]) -> None:
        def done(f: concurrent.futures.Future[Any]) -> None:
            error = None if f.cancelled() else f.exception()
            if error is not None:
                # The page that asked has its answer already; the server's terminal is
                # where an advance that failed afterwards is told.
                self.failures.append(error)
                code = getattr(error, "code", type(error).__name__)
                print(f"rein serve: {code}: {error}", file=sys.stderr, flush=True)

        future.add_done_callback(done)

    async def start(self, path: str, *, digest: str, given: Mapping[str, Any]) -> str:
        """Prepare and start ``path`` approved as ``digest``; the new run's id as soon as it
        exists (the run goes on here). PrepareFailed or APPROVAL_STALE, with nothing
        written, when the file is not what was shown."""
        named: concurrent.futures.Future[str] = concurrent.futures.Future()

        async def job(h: Harness) -> Any:
            prepared = await h.prepare(path, given=given)
            self._started.append(named)
            try:
                return await h.start(prepared, approved=digest)
            finally:
                if named in self._started:
                    self._started.remove(named)

        running = self._submit(job)
        self._background(running)
        return await _first(named, running)

    async def answer(self, approval_id: str, status: ApprovalStatus, *, digest: str,
                     note: str | None, values: Mapping[str, Any]) -> str:
        """Record an answer bound to ``digest``; the run continues here afterwards. What
        was recorded, in words, once it is recorded."""
        recorded: concurrent.futures.Future[str] = concurrent.futures.Future()

        async def job(h: Harness) -> Any:
            return await h.answer(approval_id, status, digest=digest, note=note or None,
                                  values=values, recorded=recorded.set_result)

        running = self._submit(job)
        self._background(running)
        return await _first(recorded, running)

    async def cancel(self, run_id: str) -> str:
        async def job(h: Harness) -> Any:
            return await h.cancel(run_id, note="cancelled from the web console")

        outcome = await asyncio.wrap_future(self._submit(job))
        return str(outcome.status.value)

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until the jobs asked so far are done (tests, shutdown)."""
        async def nothing(_h: Harness) -> None:
            return None

        try:
            self._submit(nothing).result(timeout)
        except concurrent.futures.TimeoutError:
            return False
        return True

    def close(self) -> None:
        self.idle()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._harness.close()
        self._loop.close()


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
