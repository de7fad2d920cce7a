"""The store's interface, cut by roles, over one connection and one transaction.

Every state transition is one call to :meth:`Events.transition`, which writes the event that
describes it together with the node row, run fields or approval it changes, in one
transaction (a run's creation: :meth:`Events.create_run`, with its first event). A crash therefore never leaves a state change without its event or an event
without its state. The SQL is portable so that the SQLite and PostgreSQL backends implement
every role behind the same shared test suite (``tests/store``).

A role is what one kind of caller needs, so a caller can say which it uses:

- :class:`Transactions` — the connection: grouping writes, redaction, closing;
- :class:`Events` — the event log's rows: append (with the change it describes, a run's
  creation among them), read, publish after commit, and the signal that another
  connection committed;
- :class:`Runs` — runs and their node rows read, their removal and their lock;
- :class:`ApprovalQueue` — the questions asked of a person and their answers;
- :class:`DriverTurns` — instructions handed to an external agent and its envelopes;
- :class:`Threads` — the session runtime's threads and their turns;
- :class:`Processes` — process groups started for a run, until they are gone.

(The scale-out queue's rows are PostgreSQL's alone: :mod:`rein.store.queue_rows`, removed
with their runs.) :class:`Store` is every role at once: what one backend object provides.
The rows themselves are plain values (:mod:`rein.store.rows`), re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager

from rein.core.ids import RunId
from rein.core.states import ApprovalStatus, NodeStatus, TurnStatus
from rein.store.rows import (
    ApprovalRow,
    AttemptFacts,
    CommitHook,
    DriverTurn,
    Event,
    NodeFacts,
    NodeRow,
    ProcessRow,
    RunRow,
    ThreadRow,
    ThreadTurnRow,
    Transition,
    WorkspaceRef,
    run_ids,
)

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if not TYPE_CHECKING:
    Protocol = object  # the roles below are for the type checker
if TYPE_CHECKING:
    from typing import Any, Protocol  # noqa: TC004 - object at run time, above

    from rein.formats.redaction import Secrets


class Transactions(Protocol):
    """The connection every role shares. One instance per process; not shared across
    threads. Every write redacts the secrets the store knows (:mod:`rein.formats.redaction`)
    from everything it stores, and returns what it stored."""

    url: str  # where it lives (a database file or a server URL): two objects, one database
    secrets: Secrets  # what every write redacts (:meth:`know` adds to it)

    def know(self, secrets: Secrets) -> None:
        """Redact ``secrets`` too from everything written from now on."""
        ...

    def redact(self, value: Any) -> Any:
        """``value`` as this store would write it (secrets replaced)."""
        ...

    def atomic(self) -> AbstractContextManager[None]:
        """Group several writes into one transaction (all of them, or none)."""
        ...

    def batch(self) -> AbstractContextManager[None]:
        """Let several complete writes share one transaction (fewer commits). Code raising
        between them commits those before it; a write failing part-way rolls all back. The
        block must not await."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


class Events(Protocol):
    """The event log's rows. The store never makes up an event: a write that appends one is
    handed its type and payload by the caller (:mod:`rein.engine.events` names them all),
    and after the transaction commits the store hands the events it appended to every
    :meth:`on_commit` hook, so nothing written is left unpublished and nothing rolled back
    is published."""

    def create_run(self, run: RunRow, *, event_type: str, payload: Mapping[str, Any]) -> Event:
        """Insert a run and its first event in one transaction."""
        ...

    def transition(
        self,
        run_id: RunId,
        event_type: str,
        payload: Mapping[str, Any],
        at: str,
        change: Transition | None = None,
        *,
        hold: bool = False,
    ) -> Event:
        """Append one event and apply ``change``, atomically. ``hold``: its commit waits for
        the next write (or :meth:`flush`), which then commits both at once."""
        ...

    def append_all(self, run_id: RunId, event_type: str,
                   payloads: Sequence[Mapping[str, Any]], at: str) -> list[Event]:
        """Append several events of one type, in order, atomically, with no state change
        (none when ``payloads`` is empty): each an event of its own."""
        ...

    def flush(self) -> None:
        """Commit a held write now; nothing when none is held."""
        ...

    def flush_on_loop(self) -> None:
        """:meth:`flush` from the event loop's turn: a failure is kept, and raised by the
        next write or by closing the store."""
        ...

    def flush_soon(self) -> None:
        """Have the running event loop's next turn commit a held write (scheduled once,
        however many writes are held before it); commit it now when no loop runs."""
        ...

    def events(self, run_id: RunId, *, after: int = 0,
               types: Sequence[str] | None = None) -> list[Event]:
        """Events with ``seq > after`` (only of ``types`` when given), in order."""
        ...

    def on_commit(self, hook: CommitHook) -> Callable[[], None]:
        """Call ``hook`` with the events of every transaction this store object commits
        from now on; returns the function that removes it."""
        ...

    def changes(self) -> int | None:
        """A number that changes when another connection (in any process) has committed
        since the last call, read without touching a table; None when the backend has no
        such signal (then a follower reads the log on a timer). This object's own commits
        reach :meth:`on_commit` instead."""
        ...


class Runs(Protocol):
    """Runs and their node rows, read (a run is created, and changed, with its event:
    :class:`Events`); a run's removal; the lock that lets one process advance it."""

    def get_run(self, run_id: str) -> RunRow | None:
        """The run, or ``None``."""
        ...

    def list_runs(self, *, include_children: bool = False,
                  workspaces: Sequence[str | None] | None = None) -> list[RunRow]:
        """Runs, newest first; ``workspaces``: only the runs of these workspace ids (``None``
        among them: the runs stored without one, before schema version 6)."""
        ...

    def child_runs(self, parent_run_id: RunId) -> list[RunRow]:
        """The subgraph runs started by one run, in creation order."""
        ...

    def nodes(self, run_id: RunId) -> list[NodeRow]:
        """Every node row of a run, in order of first appearance."""
        ...

    def node(self, run_id: RunId, node_key: str) -> NodeRow | None:
        """One node row, or ``None``."""
        ...

    def node_counts(self, run_id: RunId) -> dict[tuple[str, NodeStatus], int]:
        """How many node rows of each (type, status) a run has, counted without reading
        any record."""
        ...

    def iter_nodes(self, run_id: RunId, *, exclude: Sequence[NodeStatus] = (),
                   records: bool = True) -> Iterator[NodeRow]:
        """The node rows of a run in order, streamed, without those of the ``exclude``
        statuses; ``records=False``: each row's record left empty, none read."""
        ...

    def usage_facts(self, run_id: RunId) -> Iterator[NodeFacts | AttemptFacts]:
        """What a run's usage is summed from, in no particular order, a handful for a run of
        any size: its node rows grouped, their figures summed from the columns written
        with each row (:class:`NodeFacts`); and, for the rows with a driver's attempt or
        written without those columns, their attempts (and their nodes without any)
        grouped from their records (:class:`AttemptFacts`). Every row is in one or the
        other, once."""
        ...

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Remove these runs and every row stored for them (events, nodes, approvals,
        driver turns, process groups) in one transaction; the number of runs removed. The
        caller names whole run families and holds their locks."""
        ...

    def lock_run(self, run_id: str) -> AbstractContextManager[None]:
        """Hold the right to advance a run; raises ``Refused`` (``RUN_LOCKED``) when another
        process holds it. Released when the holder exits, however it exits."""
        ...

    def run_locked(self, run_id: str) -> bool:
        """Whether some process (this one included) holds the run lock of ``run_id`` now."""
        ...


class ApprovalQueue(Protocol):
    """The questions asked of a person, each bound to the digest of what was shown. An
    entry is written with its ``approval/requested`` event (:meth:`Events.transition`)."""

    def approvals(
        self, *, run_id: RunId | None = None, status: ApprovalStatus | None = None,
        run_ids: Sequence[str] | None = None,
    ) -> list[ApprovalRow]:
        """Approval queue entries, oldest first; ``run_id``: of that run only; ``run_ids``:
        of any of these runs (a run family); ``status``: in that status only. Chosen by
        the database: no other entry is read."""
        ...

    def get_approval(self, approval_id: str) -> ApprovalRow | None:
        """One approval, or ``None``."""
        ...

    def answer_approval(self, approval_id: str, status: ApprovalStatus,
                        answer: Mapping[str, Any], at: str, *, event_type: str,
                        payload: Mapping[str, Any]) -> tuple[ApprovalRow, bool]:
        """Answer a pending approval with its event, atomically: ``(row, changed)``. The
        same status again changes nothing and appends nothing; a different answer to an
        answered approval raises ``Refused`` (``APPROVAL_ANSWERED``); an unknown id raises
        ``StoreError`` (``APPROVAL404``)."""
        ...


class DriverTurns(Protocol):
    """The instructions handed to an external agent (the driver) and its envelopes."""

    def add_driver_turn(self, turn: DriverTurn, *, event_type: str,
                        payload: Mapping[str, Any]) -> tuple[DriverTurn, bool]:
        """Insert ``turn`` with its event, atomically, unless its token exists: returns the
        stored row and whether this call inserted it."""
        ...

    def answer_driver_turn(self, token: str, answer: Mapping[str, Any], at: str, *,
                           event_type: str, payload: Mapping[str, Any]
                           ) -> tuple[DriverTurn, bool]:
        """Consume an envelope for the pending turn ``token`` with its event, atomically:
        ``(turn, changed)``. The same envelope again changes nothing; another envelope for
        an answered turn raises ``Refused`` (``DRIVER_ANSWERED``)."""
        ...

    def driver_turn(self, token: str) -> DriverTurn | None:
        """The turn with ``token``, or ``None``."""
        ...

    def driver_turns(self, root_run_id: str, *, status: TurnStatus | None = None
                     ) -> list[DriverTurn]:
        """The turns of one run family, oldest first (only those in ``status`` if given)."""
        ...


class Threads(Protocol):
    """The session runtime's threads and their turns, in order."""

    def save_thread(self, row: ThreadRow) -> None:
        """Create or replace a thread row."""
        ...

    def get_thread(self, thread_id: str) -> ThreadRow | None:
        """One thread, or ``None``."""
        ...

    def list_threads(self) -> list[ThreadRow]:
        """Every thread, oldest first."""
        ...

    def add_thread_turn(self, row: ThreadTurnRow) -> None:
        """Append a turn to its thread (``seq`` is the next one)."""
        ...

    def set_turn_run(self, turn_id: str, run_id: str) -> None:
        """Record the run a turn started."""
        ...

    def thread_turns(self, thread_id: str) -> list[ThreadTurnRow]:
        """A thread's turns, in order."""
        ...


class Processes(Protocol):
    """Process groups started for a run (a command criterion, a command worker)."""

    def record_process(self, row: ProcessRow) -> None:
        """Remember a process group started for a run (before it can outlive us); the same
        ``(run_id, pgid)`` again replaces the row."""
        ...

    def forget_process(self, run_id: str, pgid: int) -> None:
        """The group is gone: drop its row (nothing happens when there is none)."""
        ...

    def processes(self, run_id: str) -> list[ProcessRow]:
        """Process groups recorded for a run and not yet forgotten, oldest first."""
        ...


class Store(Transactions, Events, Runs, ApprovalQueue, DriverTurns, Threads, Processes,
            Protocol):
    """Where run state lives: every role, over one connection and one transaction."""


__all__ = ["ApprovalQueue", "ApprovalRow", "CommitHook", "DriverTurn", "DriverTurns", "Event",
           "Events", "NodeRow", "ProcessRow", "Processes", "RunRow", "Runs", "Store",
           "ThreadRow", "ThreadTurnRow", "Threads", "Transactions", "Transition",
           "WorkspaceRef", "run_ids"]
