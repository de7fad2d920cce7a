"""Who sets a queue's settings: one owner, not the last worker started.

DBOS keeps each queue's settings in a row of its ``queues`` table, and by default any process
that registers the queue overwrites it. rein splits the settings in two:

- **A worker's own**: ``worker_concurrency`` (with ``prefetch``) and the polling interval are
  how one machine takes attempts. Each worker polls with its own
  (:class:`~rein.executors.polling.QuietPolls` answers DBOS's per-poll reload with
  them), whatever the row says; workers of different sizes are fine.
- **Shared**: ``global_concurrency`` and the rate limits bound every worker of the queue at
  once, so all must use the same. The first worker to serve a queue (no live worker
  serves it yet) writes them; a worker that joins while others serve it adopts the stored
  ones and, when its own ``rein.toml`` disagrees, says so with ``SCALE008``. New shared
  settings take effect when the queue's last worker has stopped and the next one starts.

Registration is serialized by an advisory lock, so two workers starting at once do not both
take themselves for the first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rein.executors import heartbeat

_REGISTER_LOCK = 0x72656971  # one registering worker at a time
DISAGREES = "SCALE008"


def shared_of(queue: Any) -> dict[str, Any]:
    """The settings every worker of ``queue`` (a DBOS Queue) must share."""
    return _shared(queue._concurrency, queue._limiter)


def _shared(global_concurrency: int | None,
            limiter: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"global_concurrency": global_concurrency,
            "rate_limit": None if limiter is None else
            {"limit": int(limiter["limit"]), "period": float(limiter["period"])}}


def register(conn: Any, executor_id: str, name: str, *, worker_concurrency: int,
             global_concurrency: int | None, limiter: Mapping[str, Any] | None,
             polling_interval_sec: float, register_queue: Callable[..., Any],
             say: Callable[[str], None]) -> Any:
    """Register ``name`` for this worker and return the Queue to poll it with: its shared
    settings the queue's (this worker's when it is the first), the rest this worker's."""
    own = _shared(global_concurrency, limiter)
    conn.execute("SELECT pg_advisory_lock(%s)", (_REGISTER_LOCK,))
    try:
        peers = [e for e in heartbeat.live(conn) if e["executor_id"] != executor_id
                 and name in e["queues"]
                 and e["seconds_since_beat"] < heartbeat.STALE_SECONDS]
        queue = register_queue(
            name, worker_concurrency=worker_concurrency,
            global_concurrency=global_concurrency,
            limiter=None if limiter is None else dict(limiter),
            polling_interval_sec=polling_interval_sec,
            on_conflict="never_update" if peers else "always_update")
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_REGISTER_LOCK,))
    stored = shared_of(queue)
    if stored != own:
        diff = "; ".join(f"{k} {stored[k]!r} (this worker's rein.toml: {own[k]!r})"
                         for k in own if stored[k] != own[k])
        say(f"{DISAGREES} queue {name}: the workers serving it share {diff}; this worker "
            "follows the queue's.\n  hint: give every worker the same [executor] settings; "
            "new shared settings apply once every worker of the queue has stopped")
    # This worker's own, whatever the row holds (see the module docstring).
    queue._worker_concurrency = worker_concurrency
    queue._polling_interval_sec = polling_interval_sec
    return queue


__all__ = ["register", "shared_of"]
