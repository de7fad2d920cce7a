"""The store protocol: what the engine persists, and the rows it reads back.

Every state transition is one call to :meth:`Store.transition`, which writes the event that
describes it together with the node row, run fields or approval it changes, in one
transaction. A crash therefore never leaves a state change without its event or an event
without its state. The protocol is small and its SQL portable so that a PostgreSQL backend
can implement it behind the same shared test suite.

The rows are :class:`rein.core.frozen.Frozen` values, not dataclasses: every command that
reads a run imports them, and a driver turn is a fresh process each time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from rein.core.frozen import Frozen, field
from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus, TurnStatus

if TYPE_CHECKING:
    from rein.formats.redaction import Secrets


class WorkspaceRef(Frozen):
    """The workspace a run belongs to (:mod:`rein.store.workspace_id`)."""

    id: str  # made once per workspace, kept in its .rein/workspace.json: what decides
    path: str  # the workspace's real path when the run started: to show, and to say where
    host: str  # the machine it was on then

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "path": self.path, "host": self.host}


class RunRow(Frozen):
    """One run (top-level or a subgraph's child run)."""

    run_id: RunId
    graph_id: str
    graph_path: str  # the document as given on the command line (or the ref it came from)
    graph_digest: str
    status: RunStatus
    started_at: str
    finished_at: str | None = None
    parent_run_id: RunId | None = None
    parent_node_key: NodeKey | None = None  # the subgraph node in the parent run
    # What the approval bound: params, child digests, the approved digest, overrides.
    binding: Mapping[str, Any] = field(default_factory=dict)
    # Run-level parts of the record: outputs, usage, graph_success, diagnostics, ...
    summary: Mapping[str, Any] = field(default_factory=dict)
    # The workspace a top-level run belongs to; None for a child run (it belongs to its
    # top-level run's) and for a run stored before runs recorded one (schema version 6).
    workspace: WorkspaceRef | None = None


class NodeRow(Frozen):
    """The persisted state of one node in one scope instance."""

    run_id: RunId
    node_key: NodeKey
    node_id: str
    scope_path: str  # "" at the top level, e.g. "repair_loop[1]" inside a loop body
    type: str
    status: NodeStatus
    seq: int = 0  # order of first appearance in the run (stable record order)
    record: Mapping[str, Any] = field(default_factory=dict)  # the node_run object, redacted


class ApprovalRow(Frozen):
    """One entry of the approval queue, bound to the digest of what was shown."""

    approval_id: ApprovalId
    run_id: RunId
    key: str  # unique per run: what is being asked, e.g. "gate:publish_approval"
    kind: ApprovalKind
    status: ApprovalStatus
    digest: str  # the digest of the material presented; an answer must name the same
    request: Mapping[str, Any]  # prompt, node, stage, mode, roles, presented material
    created_at: str
    answer: Mapping[str, Any] | None = None  # actor, note, values, edits
    answered_at: str | None = None


class DriverTurn(Frozen):
    """One instruction handed to an external agent (the driver) and, once answered, the
    envelope with what rein measured on submit (:mod:`rein.workers.driver`)."""

    token: str  # derived from (run, node, attempt, kind): asking again finds the same row
    run_id: RunId  # the run the node lives in (a subgraph's child run, or the top-level run)
    root_run_id: RunId  # the top-level run: what ``rein next`` and ``rein submit`` address
    node_key: str
    attempt: int
    kind: str  # task, decision or judge
    status: TurnStatus
    instruction: Mapping[str, Any]
    baseline: Mapping[str, Any]  # the workspace snapshot taken when the instruction was issued
    created_at: str
    answer: Mapping[str, Any] | None = None  # {"envelope": ..., "checks": ...}
    answered_at: str | None = None


class Event(Frozen):
    """One entry of the trace. ``seq`` is dense and increasing within a run."""

    run_id: RunId
    seq: int
    type: str
    payload: Mapping[str, Any]
    at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "seq": self.seq,
            "type": self.type,
            "at": self.at,
            "payload": dict(self.payload),
        }


class ThreadRow(Frozen):
    """A thread of the session runtime: its settings (``data``) and whether it is archived."""

    thread_id: str
    data: Mapping[str, Any]  # workspace, profile, sandbox, approval policy, name, ...
    archived: bool
    created_at: str
    updated_at: str


class ThreadTurnRow(Frozen):
    """One turn of a thread, in order; ``run_id`` is the run it started (None until then)."""

    thread_id: str
    seq: int
    turn_id: str
    input: Mapping[str, Any]  # what the client sent, and the turn's kind
    created_at: str
    run_id: str | None = None


class ProcessRow(Frozen):
    """A process group started for a run (a command criterion, a command worker).

    Recorded when the group starts and forgotten when it is gone, so a row that is still
    here after its rein died names a group that may have outlived it. ``ident`` is the
    leader's start time as the kernel reports it: a recycled process id does not match.
    """

    run_id: RunId
    pgid: int
    ident: str
    host: str
    owner_pid: int  # the rein process that started it
    started_at: str
    node_key: str | None = None


# Called once per committed transaction with the events it appended, in order.
CommitHook = Callable[[Sequence[Event]], None]


class Transition(Frozen):
    """What one transaction changes besides appending its event."""

    node: NodeRow | None = None
    run_status: RunStatus | None = None
    finished_at: str | None = None
    summary: Mapping[str, Any] | None = None  # replaces the run's summary when given
    binding: Mapping[str, Any] | None = None  # replaces the run's binding when given
    approval: ApprovalRow | None = None  # inserted, or updated when the id exists


class Store(Protocol):
    """Where run state lives. One instance per process; not shared across threads.

    Every write redacts the secrets the store knows (:mod:`rein.formats.redaction`) from
    everything it stores, and returns what it stored. The store never makes up an event: a
    write that appends one is handed its type and payload by the caller
    (:mod:`rein.engine.events` names them all), and after the transaction commits the store
    hands the events it appended to every :meth:`on_commit` hook, so nothing written is
    left unpublished and nothing rolled back is published.
    """

    url: str  # where it lives (a database file or a server URL): two objects, one database
    secrets: Secrets  # what every write redacts (:meth:`know` adds to it)

    def on_commit(self, hook: CommitHook) -> Callable[[], None]:
        """Call ``hook`` with the events of every transaction this store object commits
        from now on; returns the function that removes it."""
        ...

    def know(self, secrets: Secrets) -> None:
        """Redact ``secrets`` too from everything written from now on."""
        ...

    def redact(self, value: Any) -> Any:
        """``value`` as this store would write it (secrets replaced)."""
        ...

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

    def flush(self) -> None:
        """Commit a held write now; nothing when none is held."""
        ...

    def flush_on_loop(self) -> None:
        """:meth:`flush` from the event loop's turn: a failure is kept, and raised by the
        next write or by closing the store."""
        ...

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

    def events(self, run_id: RunId, *, after: int = 0,
               types: Sequence[str] | None = None) -> list[Event]:
        """Events with ``seq > after`` (only of ``types`` when given), in order."""
        ...

    def node(self, run_id: RunId, node_key: str) -> NodeRow | None:
        """One node row, or ``None``."""
        ...

    def approvals(
        self, *, run_id: RunId | None = None, status: ApprovalStatus | None = None
    ) -> list[ApprovalRow]:
        """Approval queue entries, oldest first."""
        ...

    def get_approval(self, approval_id: str) -> ApprovalRow | None:
        """One approval, or ``None``."""
        ...

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

    def answer_approval(self, approval_id: str, status: ApprovalStatus,
                        answer: Mapping[str, Any], at: str, *, event_type: str,
                        payload: Mapping[str, Any]) -> tuple[ApprovalRow, bool]:
        """Answer a pending approval with its event, atomically: ``(row, changed)``. The
        same status again changes nothing and appends nothing; a different answer to an
        answered approval raises ``Refused`` (``APPROVAL_ANSWERED``); an unknown id raises
        ``StoreError`` (``APPROVAL404``)."""
        ...

    def driver_turn(self, token: str) -> DriverTurn | None:
        """The turn with ``token``, or ``None``."""
        ...

    def driver_turns(self, root_run_id: str, *, status: TurnStatus | None = None
                     ) -> list[DriverTurn]:
        """The turns of one run family, oldest first (only those in ``status`` if given)."""
        ...

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

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Remove these runs and every row stored for them (events, nodes, approvals,
        driver turns, process groups) in one transaction; the number of runs removed. The
        caller names whole run families and holds their locks."""
        ...

    def atomic(self) -> AbstractContextManager[None]:
        """Group several writes into one transaction (all of them, or none)."""
        ...

    def batch(self) -> AbstractContextManager[None]:
        """Let several complete writes share one transaction (fewer commits). Code raising
        between them commits those before it; a write failing part-way rolls all back. The
        block must not await."""
        ...

    def lock_run(self, run_id: str) -> AbstractContextManager[None]:
        """Hold the right to advance a run; raises ``Refused`` (``RUN_LOCKED``) when another
        process holds it. Released when the holder exits, however it exits."""
        ...

    def run_locked(self, run_id: str) -> bool:
        """Whether some process (this one included) holds the run lock of ``run_id`` now."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


def run_ids(rows: Sequence[RunRow]) -> list[str]:
    """The ids of ``rows``, for messages."""
    return [r.run_id for r in rows]
