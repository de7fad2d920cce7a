"""The event log: the catalogue of events, the one way to append one, and the stream.

Every state change of a run is one event, written in the transaction that makes the change
(:meth:`rein.store.base.Store.transition` and the few store writes that carry their own
event, each handed its type and payload by the caller). The store redacts each payload once,
as it writes it, and after the commit hands the events it appended to its commit hooks:
:class:`EventLog` is that hook. It publishes every committed event exactly once, in commit
order, to its listeners (CLI progress, live telemetry) and wakes the store's follower. A
rolled-back transaction publishes nothing.

:func:`subscribe` is how every surface reads the log (the app-server, ACP, the SDK, ``rein
runs watch``, the web console): it replays a log's events from the store, then tails new
ones through the store's one :class:`~rein.engine.follow.Follower`, which reads each log
once per change (woken by this store's commits, and by the store's change number for any
other connection's) and never on a timer while its store can tell. What the events are in
the protocol vocabulary (thread / turn / item) is the protocol layer's
(:mod:`rein.protocol.feed`).

The ``--json`` line of an event (``run_id``, ``seq``, ``type``, ``at``, ``payload``) is
:meth:`rein.store.base.Event.to_json`; its shape is :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any, TypedDict

from rein.core.ids import RunId
from rein.engine.follow import Follower
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
    USAGE_ATTRIBUTED = "usage/attributed"  # what the driver's own records say a turn cost
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
    superseded_by: str  # closed by rein: this entry asks the same about the current content


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
        store.flush_soon()
    return event


def append_all(store: Store, run_id: RunId, event_type: EventType,
               payloads: Sequence[Mapping[str, Any]], at: str) -> list[Event]:
    """Write several events of one type in one transaction (:meth:`Store.append_all`), each an
    event of its own, published as :func:`append`'s are."""
    return store.append_all(run_id, EventType(event_type).value, payloads, at)


class EventLog:
    """Publishes what one store object commits: to its follower, then to listeners.

    One per store object (:meth:`of`); listeners added later (live telemetry attaches after
    the engine is built) see every event committed from then on.
    """

    def __init__(self, store: Store) -> None:
        # No strong reference back to the store: the store holds the log (its hook), and a
        # store nobody uses any more goes away with its log.
        self._store = weakref.ref(store)
        self._follower: Follower | None = None
        self.listeners: list[Listener] = []
        store.on_commit(self._committed)

    @property
    def follower(self) -> Follower:
        """The store's one follower (:mod:`rein.engine.follow`), made on first use."""
        if self._follower is None:
            store = self._store()
            assert store is not None, "the log of a store that is gone"
            self._follower = Follower(weakref.proxy(store))
        return self._follower

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
        # The follower first: waking it cannot fail, and a listener that raises must not
        # keep its readers waiting for the next look.
        if self._follower is not None:
            self._follower.wake()
        if self.listeners:  # most commits of a run nobody watches: nothing to do
            for event in events:
                for listener in list(self.listeners):
                    listener(event)


_LOGS: weakref.WeakKeyDictionary[Store, EventLog] = weakref.WeakKeyDictionary()


def subscribe(store: Store, run_id: str, after: int = 0, *, until_ended: bool = False,
              poll_seconds: float | None = None) -> AsyncGenerator[Event, None]:
    """The events of ``run_id`` (a run's log, or a thread's or turn's own) with
    ``seq > after``, stored ones first, then new ones as they commit, each exactly once and
    in ``seq`` order. With ``until_ended`` the iterator ends after the event that ended the
    run (at once for a run that had ended, or does not exist); otherwise stop iterating
    (``break``, or ``aclose()``) when done.

    Every event comes from the store, so a replay and a tail agree and nothing uncommitted
    is seen. The store's one :class:`~rein.engine.follow.Follower` reads the log once per
    change for all its readers: woken at once by a commit through ``store``, told of any
    other connection's (another process's) by the store's change number. ``poll_seconds``:
    how often a store without a change number is read, at most.
    """
    return EventLog.of(store).follower.follow(run_id, after, until_ended=until_ended,
                                              period=poll_seconds)


__all__ = ["SCHEMA_VERSION", "ApprovalAnswered", "DriverAnswered", "DriverInstructed",
           "EventLog", "EventType", "Follower", "Listener", "NodeChanged", "RunFinished",
           "RunStarted", "append", "append_all", "approval_answered", "subscribe"]
