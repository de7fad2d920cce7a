"""Explicit states: of a run, of a node, of an attempt, of an approval.

Every member carries a comment saying what it means; transitions are decided in the
scheduler and persisted by the store together with the event that describes them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType


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
