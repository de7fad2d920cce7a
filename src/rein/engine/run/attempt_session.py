"""What the engine offers one worker attempt: state that survives a pause, and the queue.

A model worker that meets a tool call in ``ask`` cannot keep its conversation in memory while
the run waits: the process exits with code 3 and the answer may come from another process
(``rein approvals accept`` continues the run there). So the worker saves what it needs
through :meth:`EngineSession.save_state` and raises ``WorkerPaused``; when the run continues,
the same attempt of the same node is scheduled again and :meth:`EngineSession.load_state`
hands the state back.

The state is an ``attempt/state`` event in the run's trace, like every other change
(DESIGN.md decision 2): the latest one for a node key and attempt wins, and a ``None`` state
marks it consumed, so a later attempt never picks up a stale conversation. Secrets are
masked by :meth:`RunContext.emit` before the event is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen
from rein.core.states import ApprovalKind, ApprovalStatus
from rein.engine.events import EventType
from rein.engine.run import approvals
from rein.engine.run.runtime import RunContext
from rein.workers.base import Answer

STATE_EVENT = EventType.ATTEMPT_STATE
STEER_EVENT = EventType.INPUT_STEERED


class EngineSession(Frozen):
    """The :class:`rein.workers.base.AttemptSession` of one attempt of one node."""

    ctx: RunContext
    node_key: str
    attempt: int
    worker: str

    def load_state(self) -> Mapping[str, Any] | None:
        """The latest state saved for this node key and attempt, or ``None``."""
        found: Mapping[str, Any] | None = None
        for event in self.ctx.env.store.events(self.ctx.env.run_id):
            p = event.payload
            if (event.type == STATE_EVENT and p.get("node") == self.node_key
                    and p.get("attempt") == self.attempt and p.get("worker") == self.worker):
                found = p.get("state")
        return found

    def save_state(self, state: Mapping[str, Any] | None) -> None:
        """Write the state (``None`` clears it) as one event of the run."""
        self.ctx.emit(STATE_EVENT, {"node": self.node_key, "attempt": self.attempt,
                                    "worker": self.worker,
                                    "state": None if state is None else dict(state)})

    def steered(self) -> list[str]:
        """The texts a person added to this node's turn while it ran (``turn/steer``), in
        order: the model worker reads those it has not read yet before its next step."""
        return [str(e.payload.get("text") or "") for e in self.ctx.env.store.events(self.ctx.env.run_id)
                if e.type == STEER_EVENT and e.payload.get("node") == self.node_key]

    async def ask(self, key: str, request: Mapping[str, Any], *,
                  kind: str = "tool_call") -> tuple[str, Answer | None]:
        """Queue an approval (idempotent); ``(approval_id, answer or None)``.

        ``kind`` is ``tool_call`` (one call of this attempt) or ``mcp_launch`` (a server of
        the node's profile; the answer holds for every attempt of the node while the launch
        material is unchanged). A cancelled entry stops the run (``RunCancelled``
        propagates, as for gates); a declined or timed-out one is a ``decline``.
        """
        scope = (f"mcp_launch:{self.node_key}" if kind == "mcp_launch"
                 else f"tool:{self.node_key}#{self.attempt}")
        row = await approvals.ask(
            self.ctx, key=f"{scope}:{key}",
            kind=ApprovalKind(kind), request={"node": self.node_key, **request},
            block=False)
        match row.status:
            case ApprovalStatus.PENDING:
                return row.approval_id, None
            case ApprovalStatus.ACCEPTED:
                return row.approval_id, "accept"
            case _:
                return row.approval_id, "decline"
