"""Quiet queue polling for ``rein worker``: a look at the database only when it may find work.

DBOS's queue thread wakes every ``polling_interval_sec`` and, for each queue, reads the
queue's row again (its settings) and then runs the claim (a version check and a select)
whether or not anything was enqueued: three statements per queue per wake, for every idle
worker. :class:`QuietPolls` wraps two methods of the launched DBOS instance's system
database, on that instance only:

- ``get_queue`` answers with the settings this worker registered (:meth:`QuietPolls.own`),
  so a worker polls with its own ``worker_concurrency`` and the shared limits it adopted
  (:mod:`rein.executors.queue_settings`), not with whatever the last worker wrote;
- ``start_queued_workflows`` claims only when the queue may hold work: a notification on
  ``rein_enqueued`` named it since the last claim (the trigger of
  :mod:`rein.executors.heartbeat`), or the last claim filled every slot it was
  offered (more may wait), or :data:`FALLBACK_SECONDS` went by (a notification lost while
  the listener reconnected). A queue with a shared limit (``global_concurrency``, a rate
  limit) is always claimed from, as DBOS does: room there opens when others finish.
  A claim from one of this worker's queues takes only workflows of this worker's version
  (``is_latest_version=False``): rein's coordinators always enqueue under
  :data:`~rein.executors.names.APP_VERSION` and a resume keeps it, so DBOS's question
  whether this is the newest registered version (one more statement in every claim, to
  decide whether workflows enqueued with no version may be taken too) has no job to
  decide for.

So an idle worker sends no statement per wake. Nor does it wake: ``get_queue`` is where each
of DBOS's queue threads begins its round, so there the thread sleeps while its queue is not
due, until a notification, the worker's own registration, or the fallback wakes it; a short
``polling_interval_sec`` then bounds only how soon a notified claim follows, not how often an
idle worker wakes (50 times a second per queue before, which was a third of an idle
worker's CPU; ``tests/executors/test_quiet_polls.py``). Both methods are DBOS internals:
the dbos versions this works with are pinned in ``pyproject.toml``, and :func:`install`
leaves DBOS as it is (and says so) when their signatures are not the expected ones.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

FALLBACK_SECONDS = 1.0
_CLAIM_PARAMS = ("queue", "executor_id", "app_version", "queue_partition_key",
                 "local_running_count")


class QuietPolls:
    """Decides, per queue, whether a claim may find work; see the module docstring."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 wait: Callable[[threading.Condition, float], object] | None = None) -> None:
        self.clock = clock
        # how a queue thread sleeps, holding the lock: the condition's own wait by default
        self._wait = wait or (lambda cond, seconds: cond.wait(seconds))
        self._lock = threading.Condition()
        self._queues: dict[str, Any] = {}  # name -> the Queue this worker registered
        self._heard: dict[str, int] = {}  # notifications per queue name
        self._seen: dict[str, int] = {}  # of those, how many the last claim began after
        self._more: set[str] = set()  # the last claim filled its slots: more may wait
        self._last: dict[str, float] = {}
        self.claims = 0  # claims sent to the database
        self.skipped = 0  # claims answered here: nothing could be waiting
        self.sleeps = 0  # waits of a queue thread in get_queue

    def own(self, queue: Any) -> None:
        """Poll ``queue`` (a DBOS Queue as registered) with these settings from now on."""
        with self._lock:
            self._queues[queue.name] = queue
            self._more.add(queue.name)  # look once: work may have waited before
            self._lock.notify_all()

    def heard(self, queue_name: str | None) -> None:
        """A notification: something was enqueued on ``queue_name`` (``None``: anywhere)."""
        with self._lock:
            for name in (list(self._queues) if queue_name is None else [queue_name]):
                self._heard[name] = self._heard.get(name, 0) + 1
            self._lock.notify_all()

    def get_queue(self, original: Callable[..., Any], name: str, **kw: Any) -> Any:
        """This worker's Queue for ``name``, once a claim from it may find work: the queue
        thread sleeps here until then (other queues and calls go to DBOS)."""
        with self._lock:
            queue = self._queues.get(name)
            if queue is not None and not kw:
                while (left := self._due_in(queue, self.clock())) > 0:
                    self.sleeps += 1
                    self._wait(self._lock, left)
                return queue
        return original(name, **kw)

    def _due_in(self, queue: Any, now: float) -> float:
        """Seconds until a claim from ``queue`` is due (0: now); with the lock held."""
        name = queue.name
        shared = (queue._concurrency is not None or queue._limiter is not None
                  or queue._partition_concurrency is not None
                  or queue._partition_limiter is not None)
        if (name not in self._queues or shared or name in self._more
                or self._heard.get(name, 0) > self._seen.get(name, 0)):
            return 0.0
        return max(0.0, FALLBACK_SECONDS - (now - self._last.get(name, 0.0)))

    def start_queued_workflows(self, original: Callable[..., Any], queue: Any, *args: Any,
                               **kw: Any) -> Any:
        name = queue.name
        now = self.clock()
        with self._lock:
            if self._due_in(queue, now) > 0:
                self.skipped += 1
                return [], None
            self._seen[name] = self._heard.get(name, 0)
            self._last[name] = now
            self.claims += 1
            if name in self._queues and kw.get("is_latest_version") is None:
                kw = {**kw, "is_latest_version": False}
        got = original(queue, *args, **kw)
        running = args[3] if len(args) > 3 else kw.get("local_running_count", 0)
        room = (None if queue._worker_concurrency is None
                else queue._worker_concurrency - int(running))
        with self._lock:
            if room is not None and len(got[0]) >= room:
                self._more.add(name)
            else:
                self._more.discard(name)
        return got


def install(sys_db: Any, polls: QuietPolls) -> str | None:
    """Wrap ``sys_db``'s two methods with ``polls``; why not (``None``: done)."""
    try:
        claim = inspect.signature(sys_db.start_queued_workflows)
        inspect.signature(sys_db.get_queue)
    except (AttributeError, TypeError, ValueError):
        return "this dbos has no get_queue/start_queued_workflows to wrap"
    if tuple(claim.parameters)[:len(_CLAIM_PARAMS)] != _CLAIM_PARAMS \
            or "is_latest_version" not in claim.parameters:
        return f"this dbos's start_queued_workflows{claim} is not the one expected"
    get_queue, start = sys_db.get_queue, sys_db.start_queued_workflows

    def wrapped_get_queue(name: str, **kw: Any) -> Any:
        return polls.get_queue(get_queue, name, **kw)

    def wrapped_start(queue: Any, *args: Any, **kw: Any) -> Any:
        return polls.start_queued_workflows(start, queue, *args, **kw)

    sys_db.get_queue = wrapped_get_queue
    sys_db.start_queued_workflows = wrapped_start
    return None


__all__ = ["FALLBACK_SECONDS", "QuietPolls", "install"]
