"""What a node kind hands back: the end it reached, applied to the node's state in one place.

A kind (and the failure ladder it falls through) decides; it does not write the node's
status, outputs or end-of-node record fields itself. :func:`rein.engine.run.nodes.execute_node`
applies the :class:`NodeOutcome` through the one checked ``transition()``, so a kind cannot
leave a node half-ended (a status without its outputs, a skip without its reason). What a
kind records while it is still running (its attempts, human events, resolved inputs) stays
on the state: a pause persists it before any outcome exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen, field
from rein.core.ids import RunId
from rein.core.states import NodeStatus, RunStatus


class NodeOutcome(Frozen):
    """A node's terminal status, what it produced, and the record fields its end adds."""

    status: NodeStatus
    outputs: Mapping[str, Any] | None = None  # None: the node keeps what it has (nothing)
    decision: str | None = None
    degraded: bool = False  # succeeded through succeed_degraded, or a partial child run
    unabsorbed: bool = False  # failed (or blocked) and the ladder did not absorb it
    record: Mapping[str, Any] = field(default_factory=dict)  # node_run fields to set

    def __post_init__(self) -> None:
        if not self.status.terminal:
            raise ValueError(f"a node outcome ends the node, not {self.status.value}")

    def noting(self, **fields: Any) -> NodeOutcome:
        """This outcome with more record fields; the ones given first win (the ladder's own
        reasons are not overwritten by the caller's context)."""
        return self.replace(record={**fields, **self.record})


def succeeded(outputs: Mapping[str, Any], *, decision: str | None = None,
              record: Mapping[str, Any] | None = None) -> NodeOutcome:
    return NodeOutcome(status=NodeStatus.SUCCEEDED, outputs=dict(outputs), decision=decision,
                       record=dict(record or {}))


def skipped(reason: str) -> NodeOutcome:
    return NodeOutcome(status=NodeStatus.SKIPPED, record={"skip_reason": reason})


def failed(**record: Any) -> NodeOutcome:
    """Failed and not absorbed by the ladder: the run fails unless an edge routes it."""
    return NodeOutcome(status=NodeStatus.FAILED, unabsorbed=True, record=record)




class RunOutcome(Frozen):
    """Where a run stands when control returns to the caller (a Harness result type)."""

    run_id: RunId
    status: RunStatus
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "status": self.status.value, "digest": self.digest}


__all__ = ["NodeOutcome", "RunOutcome", "failed", "skipped", "succeeded"]
