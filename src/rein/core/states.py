"""Explicit states: of a run, of a node, of an attempt, of an approval.

Every member carries a comment saying what it means. A node's statuses come with the
changes AGS §17.2 allows between them (:data:`ALLOWED`) and the one way a status changes
(:func:`transition`): the engine's scheduler decides a change, this table says whether it is
one, and the store persists it with the event that describes it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Protocol

    class HasStatus(Protocol):
        status: NodeStatus


class RunStatus(enum.StrEnum):
    """Where a run stands. The first two are not terminal; a run in them can be resumed."""

    RUNNING = "running"  # scheduling, or stopped by a crash mid-way (resumable)
    WAITING = "waiting"  # paused for a worker (no worker can serve a node, or a driver turn)
    AWAITING_HUMAN = "awaiting_human"  # paused for an approval, a gate or a human criterion
    SUCCEEDED = "succeeded"  # §17.8: outputs bound, graph success passed, nothing unabsorbed
    PARTIAL = "partial"  # some required output unbound, a degraded node, or a budget stop
    FAILED = "failed"  # unabsorbed failure, graph success failed, or a fatal error
    CANCELLED = "cancelled"  # an operator stopped it (rein approvals cancel)

    @property
    def terminal(self) -> bool:
        return self not in (RunStatus.RUNNING, RunStatus.WAITING, RunStatus.AWAITING_HUMAN)

    @property
    def record_status(self) -> str:
        """The spelling the AGS run record allows (it has no ``waiting``)."""
        return "running" if self is RunStatus.WAITING else self.value


class NodeStatus(enum.StrEnum):
    """AGS §17.2 node states."""

    PENDING = "pending"  # not yet ready: waiting for incoming edges to resolve
    READY = "ready"  # join satisfied and ``when`` true; waiting for a slot
    RUNNING = "running"  # an attempt (or the fragment of a container) is in progress
    AWAITING_HUMAN = "awaiting_human"  # paused at a gate or checkpoint
    SUCCEEDED = "succeeded"  # terminal: done, outputs bound
    FAILED = "failed"  # terminal: the failure ladder ended in failure
    SKIPPED = "skipped"  # terminal: not run (inactive edges, ``when`` false, policy skip)
    CANCELLED = "cancelled"  # terminal: stopped by a budget, fail_fast or an operator
    BLOCKED = "blocked"  # terminal: could not start (tier, tool, isolation, human channel)

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL

    @property
    def failed_like(self) -> bool:
        """``blocked`` counts as ``failed`` for edge resolution (§17.2)."""
        return self in (NodeStatus.FAILED, NodeStatus.BLOCKED)


_TERMINAL = frozenset(
    {
        NodeStatus.SUCCEEDED,
        NodeStatus.FAILED,
        NodeStatus.SKIPPED,
        NodeStatus.CANCELLED,
        NodeStatus.BLOCKED,
    }
)


#: The status changes AGS §17.2 allows. Every status change in the engine goes through
#: :func:`transition`; a change the table does not allow is a bug in rein, not in the graph,
#: and raises :class:`IllegalTransition` instead of being written to the store. A terminal
#: status is final: nothing leaves it in a run.
ALLOWED: Mapping[NodeStatus, frozenset[NodeStatus]] = MappingProxyType({
    # Waiting for edges: it becomes ready, is skipped or cancelled, or runs directly (a
    # stand-in, an undo and a compensation are started without being scheduled).
    NodeStatus.PENDING: frozenset({NodeStatus.READY, NodeStatus.RUNNING, NodeStatus.SKIPPED,
                                   NodeStatus.CANCELLED}),
    NodeStatus.READY: frozenset({NodeStatus.RUNNING, NodeStatus.SKIPPED,
                                 NodeStatus.CANCELLED}),
    # Running ends in any terminal state, pauses, or goes back to pending when a global
    # budget refused it before it spent anything (RT061). Running again is the scheduler
    # handing the node to its executor, and a pause for a worker.
    NodeStatus.RUNNING: _TERMINAL | {NodeStatus.RUNNING, NodeStatus.PENDING,
                                     NodeStatus.AWAITING_HUMAN},
    NodeStatus.AWAITING_HUMAN: frozenset({NodeStatus.RUNNING, NodeStatus.CANCELLED}),
    **{s: frozenset() for s in _TERMINAL},
})


class IllegalTransition(AssertionError):
    """A status change AGS does not allow: a defect in the engine."""

    def __init__(self, node: str, source: NodeStatus, target: NodeStatus) -> None:
        super().__init__(f"node {node}: {source.value} -> {target.value} is not a transition")
        self.source = source
        self.target = target


def transition(state: HasStatus, target: NodeStatus, *, node: str = "?") -> None:
    """Move ``state`` to ``target``, or raise :class:`IllegalTransition`."""
    if target not in ALLOWED[state.status]:
        raise IllegalTransition(node, state.status, target)
    state.status = target


def restore(state: HasStatus, stored: NodeStatus, *, node: str = "?") -> None:
    """Take a terminal status from the store for a node that has not run in this process.

    Adopting a node's stored terminal state on replay is not a transition (the node did not
    run again)."""
    if not stored.terminal or state.status.terminal:
        raise IllegalTransition(node, state.status, stored)
    state.status = stored


class AttemptStatus(enum.StrEnum):
    """How one attempt ended, in the run record's vocabulary."""

    SUCCEEDED = "succeeded"  # outputs checked and success passed
    FAILED = "failed"  # any other failure class (the class is kept in ``error``)
    TIMEOUT = "timeout"  # wall clock or step limit
    BUDGET_EXCEEDED = "budget_exceeded"  # a node or global limit would be passed
    CRITERIA_FAILED = "criteria_failed"  # the harness's checks said no
    CANCELLED = "cancelled"  # stopped from outside


class ApprovalStatus(enum.StrEnum):
    """An entry of the approval queue."""

    PENDING = "pending"  # waiting for an answer
    ACCEPTED = "accepted"  # approved (possibly with values or a note)
    DECLINED = "declined"  # this one action is refused; the run goes on and handles it
    CANCELLED = "cancelled"  # the whole run is to stop
    TIMED_OUT = "timed_out"  # the deadline passed before an answer came


#: The one vocabulary of answers, the same on every surface (the SDK's ``turn.answer`` and
#: ``Harness.answer``, the app-server, ACP, the web console, ``rein approvals``): the word a
#: person gives → the queue's answer. A thread's questions take ``acceptForSession`` too
#: (:data:`rein.engine.cases.sessions.turn.DECISIONS`).
ANSWERS: Mapping[str, ApprovalStatus] = MappingProxyType({
    "accept": ApprovalStatus.ACCEPTED, "decline": ApprovalStatus.DECLINED,
    "cancel": ApprovalStatus.CANCELLED})


class ApprovalKind(enum.StrEnum):
    """What is being approved; every kind binds to the digest of what is shown."""

    GRAPH = "graph"  # the graph digest, parameters and child digests before a run starts
    GATE = "gate"  # a gate node (approve, review, input)
    CHECKPOINT = "checkpoint"  # a node's human checkpoint (before_start, after_outputs, ...)
    CRITERION = "criterion"  # a ``human`` success criterion
    ESCALATION = "escalation"  # ``failure.escalation`` to a human, or human_takeover
    TOOL_CALL = "tool_call"  # a tool call under an ``ask`` permission
    MCP_LAUNCH = "mcp_launch"  # launching an MCP server a profile names (its command line)
    PROFILE = "profile"  # a proposed OAP profile state delta


class TurnStatus(enum.StrEnum):
    """Where one driver turn (an instruction handed to an external agent) stands."""

    PENDING = "pending"  # the instruction is out; no envelope accepted yet
    ANSWERED = "answered"  # an envelope was accepted (consumed) for it
