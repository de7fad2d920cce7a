"""The rows the store reads back, and the change a transition makes: plain values.

The rows are :class:`rein.core.frozen.Frozen` values, not dataclasses: every command that
reads a run imports them, and a driver turn is a fresh process each time. What the store
does with them is :mod:`rein.store.base` (its roles).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rein.core.frozen import Frozen, field
from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus, TurnStatus

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any


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


class AttemptFacts(Frozen):
    """The few fields of a node row's attempts that a run's usage totals read, picked out
    of the record, for the rows whose columns do not stand for them (a driver's attempt,
    a row written without the columns: :meth:`rein.store.base.Runs.usage_facts`):
    ``count`` attempts alike in every field here, their usage figures summed.

    Alike means: the same node type, node status and ``started``, both first attempts or
    both later ones, the same attempt status, driver token and usage source, and the same
    figures of :data:`SUMMED` given as numbers (a driver's attempts stay one each: each
    has its own token)."""

    type: str  # the node's
    status: NodeStatus  # the node's
    started: bool  # the node's record has a ``started_at``
    # None: the node has no attempt; 0: its first attempt; 1: a later one
    attempt: int | None = None
    attempt_status: str | None = None
    # None when the attempts' ``usage`` is not an object; else each figure of SUMMED summed
    # over the attempts, or None where they do not give it as a number (missing, null,
    # true or false, text)
    usage: Mapping[str, Any] | None = None
    driver_token: str | None = None  # ``x-rein-driver-token``, as text
    usage_source: str | None = None  # ``x-rein-usage-source``
    count: int = 1  # how many attempts (or nodes without any) these facts stand for


# The figures of an attempt's usage that a run's totals add up
# (:func:`rein.engine.run.record.usage_of`); any other key of ``usage`` is not read.
SUMMED = ("input_tokens", "output_tokens", "total_tokens", "cost_usd", "tool_calls",
          "node_executions")
# Those a worker may be unable to measure: one not given as a number in an attempt's usage
# makes the run's total unknown (the others are summed where they are numbers).
MEASURED = SUMMED[:4]


class NodeFacts(Frozen):
    """Node rows summed up from the figures stored in their columns
    (:func:`rein.store.sql.runs.figures_of`), without their records
    (:meth:`rein.store.base.Runs.usage_facts`): ``count`` rows alike in every field here
    but the sums. A run of 50,000 checked task nodes is a handful of these.

    Never a row with a driver's attempt: those come back as :class:`AttemptFacts`, read
    from their records (what rein attributed to a driver's turn replaces its usage)."""

    type: str  # the node's
    status: NodeStatus  # the node's
    started: bool  # the node's record has a ``started_at``
    attempts: int = 0  # their attempts, summed
    # Their attempts whose status is none or succeeded: those a continuation of the run
    # takes again while the node has not ended.
    rerun: int = 0
    # None when no attempt of theirs has a ``usage`` object; else each figure of SUMMED
    # summed over those that do, or None for a figure of MEASURED one of them does not
    # give as a number
    usage: Mapping[str, Any] | None = None
    count: int = 1  # how many node rows these facts stand for


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
    envelope with what rein measured on submit (:mod:`rein.workers.driver.worker`)."""

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



def run_ids(rows: Sequence[RunRow]) -> list[str]:
    """The ids of ``rows``, for messages."""
    return [r.run_id for r in rows]
