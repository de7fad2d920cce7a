"""Server-Sent Events: a run's events from the one event log, and the runs list.

A run's stream is the run's log as the Harness follows it (:meth:`Harness.follow`: one
follower of the store for every tab, :mod:`rein.engine.follow`) written as SSE: each
event's ``id`` is its ``seq``, so a reconnecting EventSource sends ``Last-Event-ID`` and
gets exactly the events after it, from the store; a stream for a run that ended sends an ``end`` event
and closes. A client that goes away only ends its own generator.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from rein.core.loops import within
from rein.engine.service import Event, Harness
from rein.web import views

KEEPALIVE_SECONDS = 15.0  # a comment line this often keeps proxies from closing the stream
RUNS_POLL_SECONDS = 1.0  # how often a runs list with no watcher looks for changes
RUNS_REFRESH_SECONDS = 30.0  # the runs list renders again at least this often


def resume_point(last_event_id: str | None, after: str | None) -> int:
    """Where a stream starts: ``Last-Event-ID`` (a reconnect) over ``?after=`` (the page's
    last rendered event); anything that is not a sequence number counts as 0."""
    for value in (last_event_id, after):
        if value is not None and value.strip().isdigit():
            return int(value.strip())
    return 0


def frame(event: Event) -> str:
    data = {"seq": event.seq, "type": event.type, "at": event.at,
            "payload": dict(event.payload), "summary": views.summary(event)}
    return f"id: {event.seq}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


async def run_stream(h: Harness, run_id: str, after: int) -> AsyncIterator[str]:
    yield "retry: 1000\n\n"
    # A pump task reads the feed into a queue: waiting on the queue with a timeout (for the
    # keep-alive) never cancels the feed itself mid-read.
    queue: asyncio.Queue[Event | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in h.follow(run_id, after, until_ended=True):
                await queue.put(event)
        finally:
            await queue.put(None)

    task = asyncio.create_task(pump())
    ended = False
    try:
        while True:
            try:
                event = await within(queue.get(), KEEPALIVE_SECONDS)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if event is None:
                ended = True
                break
            yield frame(event)
    finally:
        task.cancel()
    if ended:
        yield "event: end\ndata: {}\n\n"


async def runs_stream(render: Callable[[], tuple[Any, str]], *,
                      poll_seconds: float = RUNS_POLL_SECONDS,
                      rounds: int | None = None,
                      wait: Callable[[], Awaitable[None]] | None = None) -> AsyncIterator[str]:
    """``event: runs`` with the table body whenever what ``render`` returns changes
    (``render``: a fingerprint and the HTML); between two renders, ``wait`` (the console's
    watcher: until something is committed) or else ``poll_seconds``; ``rounds`` bounds the
    loop in tests."""
    last: Any = None
    done = 0
    while rounds is None or done < rounds:
        seen, html = render()
        if seen != last:
            last = seen
            yield "event: runs\ndata: " + json.dumps({"html": html}) + "\n\n"
        done += 1
        if wait is not None:
            await wait()
        else:
            await asyncio.sleep(poll_seconds)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


__all__ = ["frame", "resume_point", "run_stream", "runs_stream"]
