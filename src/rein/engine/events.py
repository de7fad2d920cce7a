"""The event log: the catalogue of events, the one way to append one, and the stream.

Every state change of a run is one event, written in the transaction that makes the change
(:meth:`rein.store.base.Store.transition` and the few store writes that carry their own
event, each handed its type and payload by the caller). The store redacts each payload once,
as it writes it, and after the commit hands the events it appended to its commit hooks:
:class:`EventLog` is that hook. It publishes every committed event exactly once, in commit
order, to its listeners (CLI progress, live telemetry) and wakes the subscribers of the
same database in this process. A rolled-back transaction publishes nothing.

:func:`subscribe` is how every surface reads the log: it replays a run's events from the
store, then tails new ones, woken at once by an in-process commit and by a short poll for
commits made by other processes. :func:`notifications` maps one stored event onto the
protocol vocabulary (thread / turn / item): a run is a thread, a node is a turn, an attempt
is an item (``item/started`` → deltas → ``item/completed``).

The ``--json`` line of an event (``run_id``, ``seq``, ``type``, ``at``, ``payload``) is
:meth:`rein.store.base.Event.to_json`; its shape is :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import asyncio
import enum
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any, TypedDict

from rein.core.ids import RunId
from rein.engine.protocol_view import Notification, notifications
from rein.store.base import Event, Store, Transition

SCHEMA_VERSION = 1  # of the event line and the payloads below; bump on an incompatible change

Listener = Callable[[Event], None]


class EventType(enum.StrEnum):
    """Every event rein writes. The value is the ``type`` stored and printed."""

    RUN_STARTED = "run/started"  # a run (or a subgraph's child run) was created
    RUN_PAUSED = "run/paused"  # the run waits for a person or a worker outside the process
    RUN_RESUMED = "run/resumed"  # a paused, interrupted or reopened run continues
    RUN_FORCED = "run/forced"  # `--force` let changed files through; the run is bound to them
    RUN_CANCEL_REQUESTED = "run/cancel_requested"  # an operator asked the run to stop
    RUN_RESTARTED = "run/restarted"  # policy.resume restart: this run ended, a new one began
    RUN_FINISHED = "run/finished"  # the run reached a terminal status
    NODE_STARTED = "node/started"  # a node began (its first attempt follows)
    NODE_WAITING = "node/waiting"  # a node waits (a gate, a driver instruction, an answer)
    NODE_FINISHED = "node/finished"  # a node ended: succeeded, failed or blocked
    NODE_SKIPPED = "node/skipped"  # a node will not run: its inputs or edges rule it out
    NODE_CANCELLED = "node/cancelled"  # a node stopped because the run was cancelled
    NODE_FALLBACK = "node/fallback"  # the failure ladder moved to an alternate node
    NODE_ESCALATED = "node/escalated"  # the failure ladder moved to a higher tier
    NODE_COMPENSATING = "node/compensating"  # a node's undo runs after the run failed
    ATTEMPT_STARTED = "attempt/started"  # one try of a node's work began
    ATTEMPT_STATE = "attempt/state"  # a worker's resumable state within an attempt
    ATTEMPT_FINISHED = "attempt/finished"  # the try ended, with its result
    ATTEMPT_INTERRUPTED = "attempt/interrupted"  # the process died during the try
    ITEM = "item"  # one step a worker streamed (message, tool call, usage, ...)
    EDGE_RESOLVED = "edge/resolved"  # an edge was found active or inactive
    APPROVAL_REQUESTED = "approval/requested"  # a question entered the approval queue
    APPROVAL_ANSWERED = "approval/answered"  # it was accepted, declined, cancelled or timed out
    APPROVAL_REFUSED = "approval/refused"  # its answer did not verify: not acted on, it waits
    HUMAN_NOTIFIED = "human/notified"  # a person was told something (a notify node)
    DRIVER_INSTRUCTED = "driver/instructed"  # an instruction was handed out to the driver
    DRIVER_ANSWERED = "driver/answered"  # the driver's envelope for it was consumed
    DRIVER_REFUSED = "driver/refused"  # an envelope was refused; the instruction stands
    WORKER_UNAVAILABLE = "worker/unavailable"  # no worker can serve a node's tier or kind
    PROCESS_STOPPED = "process/stopped"  # a process group left by a dead rein was stopped
    DIAGNOSTIC = "diagnostic"  # a coded finding about the run (RT0xx, RUN_CANCELLED, ...)
    HOOK_STARTED = "hook/started"  # a lifecycle hook of an attempt's session began
    HOOK_COMPLETED = "hook/completed"  # it ended: completed, failed or blocked, with duration
    INPUT_STEERED = "input/steered"  # a person added input to a turn in progress (turn/steer)
    TURN_ENDED = "turn/ended"  # a thread's turn ended without its run finishing (in its log)


class RunStarted(TypedDict, total=False):
    graph_id: str
    digest: str
    params: dict[str, Any]
    parent_run_id: str  # child runs
    node: str  # child runs: the subgraph node of the parent
    restart_of: str  # policy.resume restart


class RunFinished(TypedDict):
    status: str


class NodeChanged(TypedDict, total=False):
    node: str  # the scoped node key
    status: str
    attempt: int
    reason: str


class ApprovalAnswered(TypedDict, total=False):
    approval_id: str
    key: str
    kind: str
    status: str
    digest: str


class DriverInstructed(TypedDict):
    token: str
    node: str
    attempt: int
    kind: str


class DriverAnswered(TypedDict):
    token: str
    node: str
    attempt: int
    status: str | None
    writes_outside: list[str]


def approval_answered(approval_id: str, key: str, status: str) -> ApprovalAnswered:
    """The payload of an answer to a queued approval."""
    return {"approval_id": approval_id, "key": key, "status": status}


def append(store: Store, run_id: RunId, event_type: EventType, payload: Mapping[str, Any],
           at: str, change: Transition | None = None, *, hold: bool = False) -> Event:
    """Write one event and the state change it describes, in one transaction.

    The store redacts the payload (and the state) as it writes them; the event is published
    after the commit by the store's commit hooks (:class:`EventLog`), never here, so an
    ``append`` inside :meth:`Store.atomic` is published only if the whole group commits.
    ``hold`` lets the next write commit this one with it (:meth:`Store.transition`); within
    a running event loop it is committed at the latest on the loop's next turn.
    """
    event = store.transition(run_id, EventType(event_type).value, payload, at, change,
                             hold=hold)
    if hold:
        try:
            asyncio.get_running_loop().call_soon(store.flush_on_loop)
        except RuntimeError:  # no loop to come back to: commit it now
            store.flush()
    return event


class EventLog:
    """Publishes what one store object commits: to listeners, then to subscribers.

    One per store object (:meth:`of`); listeners added later (live telemetry attaches after
    the engine is built) see every event committed from then on.
    """

    def __init__(self, store: Store) -> None:
        # No strong reference back to the store: the store holds the log (its hook), and a
        # store nobody uses any more goes away with its log.
        self._database = _database(store)
        self.listeners: list[Listener] = []
        store.on_commit(self._committed)

    @classmethod
    def of(cls, store: Store) -> EventLog:
        """The log of ``store``, made on first use."""
        log = _LOGS.get(store)
        if log is None:
            log = cls(store)
            _LOGS[store] = log
        return log

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every event committed from now on; returns its remover."""
        self.listeners.append(listener)

        def remove() -> None:
            if listener in self.listeners:
                self.listeners.remove(listener)

        return remove

    def _committed(self, events: Sequence[Event]) -> None:
        # Subscribers first: waking one cannot fail, and a listener that raises must not
        # keep them waiting for the next poll.
        wakers = _WAKERS.get(self._database)
        if wakers:
            for wake in list(wakers):
                wake()
        if self.listeners:  # most commits of a run nobody watches: nothing to do
            for event in events:
                for listener in list(self.listeners):
                    listener(event)


_LOGS: weakref.WeakKeyDictionary[Store, EventLog] = weakref.WeakKeyDictionary()
# Database → the wake-ups of the subscribers in this process; keyed by where the events
# live, so a commit through one store object wakes a subscriber reading through another.
_WAKERS: dict[str, list[Callable[[], None]]] = {}


def _database(store: Store) -> str:
    return store.url or f"object:{id(store)}"


def _ended(store: Store, run_id: str) -> bool:
    run = store.get_run(run_id)
    return run is None or run.status.terminal


POLL_SECONDS = 0.25  # how long a subscriber waits for another process's commits at most


async def subscribe(store: Store, run_id: str, after: int = 0, *,
                    until_ended: bool = False,
                    poll_seconds: float = POLL_SECONDS) -> AsyncGenerator[Event, None]:
    """The events of ``run_id`` with ``seq > after``, stored ones first, then new ones as
    they commit, each exactly once and in ``seq`` order. With ``until_ended`` the iterator
    ends after the event that ended the run (at once for a run that had ended, or does not
    exist); otherwise stop iterating (``break``, or ``aclose()``) when done.

    Every event comes from the store, so a replay and a tail agree and nothing uncommitted
    is seen. A commit in this process (through any store object on the same database, with
    an :class:`EventLog`) wakes the iterator at once; commits of other processes are found
    by reading the store again every ``poll_seconds``.
    """
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()

    def wake() -> None:
        try:
            loop.call_soon_threadsafe(woken.set)
        except RuntimeError:  # the subscriber's loop has closed
            pass

    wakers = _WAKERS.setdefault(_database(store), [])
    wakers.append(wake)
    try:
        while True:
            woken.clear()
            # The status before the events: a run that had ended has all its events stored
            # (its last one is in the transaction that ended it).
            ended = until_ended and _ended(store, run_id)
            for event in store.events(RunId(run_id), after=after):
                after = event.seq
                yield event
            if ended:
                return
            try:
                await asyncio.wait_for(woken.wait(), poll_seconds)
            except TimeoutError:
                pass
    finally:
        wakers.remove(wake)
        if not wakers:
            _WAKERS.pop(_database(store), None)


__all__ = ["SCHEMA_VERSION", "ApprovalAnswered", "DriverAnswered", "DriverInstructed",
           "EventLog", "EventType", "Listener", "NodeChanged", "Notification", "RunFinished",
           "RunStarted", "append", "approval_answered", "notifications", "subscribe"]
