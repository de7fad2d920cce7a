"""The rows the store reads back, and the change a transition makes: plain values.

The rows are hand-written value classes (:mod:`rein.core.frozen`), not dataclasses: every
command that reads a run imports them, and a driver turn is a fresh process each time.
What the store does with them is :mod:`rein.store.base` (its roles).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rein.core.frozen import Frozen, set_field
from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus, TurnStatus


class WorkspaceRef(Frozen):
    """The workspace a run belongs to (:mod:`rein.store.workspace_id`)."""

    __slots__ = ("host", "id", "path")
    id: str  # made once per workspace, kept in its .rein/workspace.json: what decides
    path: str  # the workspace's real path when the run started: to show, and to say where
    host: str  # the machine it was on then

    def __init__(self, *, id: str, path: str, host: str) -> None:
        set_field(self, "id", id)
        set_field(self, "path", path)
        set_field(self, "host", host)

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "path": self.path, "host": self.host}


class RunRow(Frozen):
    """One run (top-level or a subgraph's child run)."""

    __slots__ = (
        "binding",
        "finished_at",
        "graph_digest",
        "graph_id",
        "graph_path",
        "parent_node_key",
        "parent_run_id",
        "run_id",
        "started_at",
        "status",
        "summary",
        "workspace",
    )
    run_id: RunId
    graph_id: str
    graph_path: str  # the document as given on the command line (or the ref it came from)
    graph_digest: str
    status: RunStatus
    started_at: str
    finished_at: str | None
    parent_run_id: RunId | None
    parent_node_key: NodeKey | None  # the subgraph node in the parent run
    # What the approval bound: params, child digests, the approved digest, overrides.
    binding: Mapping[str, Any]
    # Run-level parts of the record: outputs, usage, graph_success, diagnostics, ...
    summary: Mapping[str, Any]
    # The workspace a top-level run belongs to; None for a child run (it belongs to its
    # top-level run's) and for a run stored before runs recorded one (schema version 6).
    workspace: WorkspaceRef | None

    def __init__(self, *, run_id: RunId, graph_id: str, graph_path: str, graph_digest: str,
                 status: RunStatus, started_at: str, finished_at: str | None = None,
                 parent_run_id: RunId | None = None,
                 parent_node_key: NodeKey | None = None,
                 binding: Mapping[str, Any] | None = None,
                 summary: Mapping[str, Any] | None = None,
                 workspace: WorkspaceRef | None = None) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "graph_id", graph_id)
        set_field(self, "graph_path", graph_path)
        set_field(self, "graph_digest", graph_digest)
        set_field(self, "status", status)
        set_field(self, "started_at", started_at)
        set_field(self, "finished_at", finished_at)
        set_field(self, "parent_run_id", parent_run_id)
        set_field(self, "parent_node_key", parent_node_key)
        set_field(self, "binding", {} if binding is None else binding)
        set_field(self, "summary", {} if summary is None else summary)
        set_field(self, "workspace", workspace)


class NodeRow(Frozen):
    """The persisted state of one node in one scope instance."""

    __slots__ = (
        "node_id",
        "node_key",
        "record",
        "run_id",
        "scope_path",
        "seq",
        "status",
        "type",
    )
    run_id: RunId
    node_key: NodeKey
    node_id: str
    scope_path: str  # "" at the top level, e.g. "repair_loop[1]" inside a loop body
    type: str
    status: NodeStatus
    seq: int  # order of first appearance in the run (stable record order)
    record: Mapping[str, Any]  # the node_run object, redacted

    def __init__(self, *, run_id: RunId, node_key: NodeKey, node_id: str, scope_path: str,
                 type: str, status: NodeStatus, seq: int = 0,
                 record: Mapping[str, Any] | None = None) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "node_key", node_key)
        set_field(self, "node_id", node_id)
        set_field(self, "scope_path", scope_path)
        set_field(self, "type", type)
        set_field(self, "status", status)
        set_field(self, "seq", seq)
        set_field(self, "record", {} if record is None else record)


class ApprovalRow(Frozen):
    """One entry of the approval queue, bound to the digest of what was shown."""

    __slots__ = (
        "answer",
        "answered_at",
        "approval_id",
        "created_at",
        "digest",
        "key",
        "kind",
        "request",
        "run_id",
        "status",
    )
    approval_id: ApprovalId
    run_id: RunId
    key: str  # unique per run: what is being asked, e.g. "gate:publish_approval"
    kind: ApprovalKind
    status: ApprovalStatus
    digest: str  # the digest of the material presented; an answer must name the same
    request: Mapping[str, Any]  # prompt, node, stage, mode, roles, presented material
    created_at: str
    answer: Mapping[str, Any] | None  # actor, note, values, edits
    answered_at: str | None

    def __init__(self, *, approval_id: ApprovalId, run_id: RunId, key: str,
                 kind: ApprovalKind, status: ApprovalStatus, digest: str,
                 request: Mapping[str, Any], created_at: str,
                 answer: Mapping[str, Any] | None = None,
                 answered_at: str | None = None) -> None:
        set_field(self, "approval_id", approval_id)
        set_field(self, "run_id", run_id)
        set_field(self, "key", key)
        set_field(self, "kind", kind)
        set_field(self, "status", status)
        set_field(self, "digest", digest)
        set_field(self, "request", request)
        set_field(self, "created_at", created_at)
        set_field(self, "answer", answer)
        set_field(self, "answered_at", answered_at)


class DriverTurn(Frozen):
    """One instruction handed to an external agent (the driver) and, once answered, the
    envelope with what rein measured on submit (:mod:`rein.workers.driver`)."""

    __slots__ = (
        "answer",
        "answered_at",
        "attempt",
        "baseline",
        "created_at",
        "instruction",
        "kind",
        "node_key",
        "root_run_id",
        "run_id",
        "status",
        "token",
    )
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
    answer: Mapping[str, Any] | None  # {"envelope": ..., "checks": ...}
    answered_at: str | None

    def __init__(self, *, token: str, run_id: RunId, root_run_id: RunId, node_key: str,
                 attempt: int, kind: str, status: TurnStatus,
                 instruction: Mapping[str, Any], baseline: Mapping[str, Any],
                 created_at: str, answer: Mapping[str, Any] | None = None,
                 answered_at: str | None = None) -> None:
        set_field(self, "token", token)
        set_field(self, "run_id", run_id)
        set_field(self, "root_run_id", root_run_id)
        set_field(self, "node_key", node_key)
        set_field(self, "attempt", attempt)
        set_field(self, "kind", kind)
        set_field(self, "status", status)
        set_field(self, "instruction", instruction)
        set_field(self, "baseline", baseline)
        set_field(self, "created_at", created_at)
        set_field(self, "answer", answer)
        set_field(self, "answered_at", answered_at)


class Event(Frozen):
    """One entry of the trace. ``seq`` is dense and increasing within a run."""

    __slots__ = ("at", "payload", "run_id", "seq", "type")
    run_id: RunId
    seq: int
    type: str
    payload: Mapping[str, Any]
    at: str

    def __init__(self, *, run_id: RunId, seq: int, type: str, payload: Mapping[str, Any],
                 at: str) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "seq", seq)
        set_field(self, "type", type)
        set_field(self, "payload", payload)
        set_field(self, "at", at)

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

    __slots__ = ("archived", "created_at", "data", "thread_id", "updated_at")
    thread_id: str
    data: Mapping[str, Any]  # workspace, profile, sandbox, approval policy, name, ...
    archived: bool
    created_at: str
    updated_at: str

    def __init__(self, *, thread_id: str, data: Mapping[str, Any], archived: bool,
                 created_at: str, updated_at: str) -> None:
        set_field(self, "thread_id", thread_id)
        set_field(self, "data", data)
        set_field(self, "archived", archived)
        set_field(self, "created_at", created_at)
        set_field(self, "updated_at", updated_at)


class ThreadTurnRow(Frozen):
    """One turn of a thread, in order; ``run_id`` is the run it started (None until then)."""

    __slots__ = ("created_at", "input", "run_id", "seq", "thread_id", "turn_id")
    thread_id: str
    seq: int
    turn_id: str
    input: Mapping[str, Any]  # what the client sent, and the turn's kind
    created_at: str
    run_id: str | None

    def __init__(self, *, thread_id: str, seq: int, turn_id: str, input: Mapping[str, Any],
                 created_at: str, run_id: str | None = None) -> None:
        set_field(self, "thread_id", thread_id)
        set_field(self, "seq", seq)
        set_field(self, "turn_id", turn_id)
        set_field(self, "input", input)
        set_field(self, "created_at", created_at)
        set_field(self, "run_id", run_id)


class ProcessRow(Frozen):
    """A process group started for a run (a command criterion, a command worker).

    Recorded when the group starts and forgotten when it is gone, so a row that is still
    here after its rein died names a group that may have outlived it. ``ident`` is the
    leader's start time as the kernel reports it: a recycled process id does not match.
    """

    __slots__ = ("host", "ident", "node_key", "owner_pid", "pgid", "run_id", "started_at")
    run_id: RunId
    pgid: int
    ident: str
    host: str
    owner_pid: int  # the rein process that started it
    started_at: str
    node_key: str | None

    def __init__(self, *, run_id: RunId, pgid: int, ident: str, host: str, owner_pid: int,
                 started_at: str, node_key: str | None = None) -> None:
        set_field(self, "run_id", run_id)
        set_field(self, "pgid", pgid)
        set_field(self, "ident", ident)
        set_field(self, "host", host)
        set_field(self, "owner_pid", owner_pid)
        set_field(self, "started_at", started_at)
        set_field(self, "node_key", node_key)


# Called once per committed transaction with the events it appended, in order.
CommitHook = Callable[[Sequence[Event]], None]


class Transition(Frozen):
    """What one transaction changes besides appending its event."""

    __slots__ = ("approval", "binding", "finished_at", "node", "run_status", "summary")
    node: NodeRow | None
    run_status: RunStatus | None
    finished_at: str | None
    summary: Mapping[str, Any] | None  # replaces the run's summary when given
    binding: Mapping[str, Any] | None  # replaces the run's binding when given
    approval: ApprovalRow | None  # inserted, or updated when the id exists

    def __init__(self, *, node: NodeRow | None = None, run_status: RunStatus | None = None,
                 finished_at: str | None = None, summary: Mapping[str, Any] | None = None,
                 binding: Mapping[str, Any] | None = None,
                 approval: ApprovalRow | None = None) -> None:
        set_field(self, "node", node)
        set_field(self, "run_status", run_status)
        set_field(self, "finished_at", finished_at)
        set_field(self, "summary", summary)
        set_field(self, "binding", binding)
        set_field(self, "approval", approval)


def run_ids(rows: Sequence[RunRow]) -> list[str]:
    """The ids of ``rows``, for messages."""
    return [r.run_id for r in rows]
