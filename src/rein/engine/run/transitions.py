"""The one way a node's status changes, and the changes AGS §17.2 allows.

Every status change in the engine goes through :func:`transition`; a change the table does
not allow is a bug in rein, not in the graph, and raises :class:`IllegalTransition` instead
of being written to the store. A terminal status is final: nothing leaves it in a run.
Adopting a node's stored terminal state on replay is not a transition (the node did not
run again) and goes through :func:`restore`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from rein.core.states import NodeStatus

_TERMINAL = frozenset(s for s in NodeStatus if s.terminal)

ALLOWED: Mapping[NodeStatus, frozenset[NodeStatus]] = {
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
}


class IllegalTransition(AssertionError):
    """A status change AGS does not allow: a defect in the engine."""

    def __init__(self, node: str, source: NodeStatus, target: NodeStatus) -> None:
        super().__init__(f"node {node}: {source.value} -> {target.value} is not a transition")
        self.source = source
        self.target = target


class HasStatus(Protocol):
    status: NodeStatus


def transition(state: HasStatus, target: NodeStatus, *, node: str = "?") -> None:
    """Move ``state`` to ``target``, or raise :class:`IllegalTransition`."""
    if target not in ALLOWED[state.status]:
        raise IllegalTransition(node, state.status, target)
    state.status = target


def restore(state: HasStatus, stored: NodeStatus, *, node: str = "?") -> None:
    """Take a terminal status from the store for a node that has not run in this process."""
    if not stored.terminal or state.status.terminal:
        raise IllegalTransition(node, state.status, stored)
    state.status = stored


__all__ = ["ALLOWED", "IllegalTransition", "restore", "transition"]
