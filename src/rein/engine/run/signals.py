"""The engine's control-flow signals: exceptions that carry a decision, not a defect.

Errors (``rein.errors``) say something went wrong; a signal says where control goes next,
and the code that raised it and the code that catches it are both part of the design.
Every signal derives from :class:`Signal`, so a handler that must not swallow control flow
(``except Exception`` around a criterion or an undo) can re-raise the whole family.

    Signal
    ├── Paused              a node waits outside the process (a person, a worker)
    ├── RunCancelled        an operator cancelled the run
    ├── InputsMissing       a required input resolved to nothing (RT033): fail before any try
    ├── CheckpointRejected  a person said no at a checkpoint: the attempt is refused
    └── Blocked             pre-flight refused the node (RT011–RT015): blocked, nothing spent

``Paused`` and ``RunCancelled`` travel up to the run; the others stop at the node kind that
raised them, which turns them into the node's terminal state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Signal(Exception):
    """Base of every control-flow signal of the engine."""


class Paused(Signal):
    """A node waits for something outside the process (a person, a worker)."""

    def __init__(self, reason: str, detail: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"waiting for {reason}")
        self.reason = reason  # "human" or "worker"
        self.detail = dict(detail or {})


class RunCancelled(Signal):
    """An operator cancelled the run (``rein approvals cancel`` answering an approval, or
    ``rein runs cancel``)."""

    def __init__(self, approval_id: str | None = None, *, by: str | None = None) -> None:
        self.reason = (f"cancelled through approval {approval_id}" if approval_id
                       else f"cancelled by {by or 'an operator'}")
        super().__init__(self.reason)
        self.approval_id = approval_id


class InputsMissing(Signal):
    """A required input resolved to nothing (RT033): the node fails before any attempt."""


class CheckpointRejected(Signal):
    """A person said no at a non-gate checkpoint: the attempt fails ``permission_denied``."""

    def __init__(self, stage: str, approval_id: str) -> None:
        super().__init__(f"checkpoint {stage} was rejected ({approval_id})")
        self.stage = stage


class Blocked(Signal):
    """The node cannot start (RT011–RT015): ``blocked``, before anything is spent."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


__all__ = ["Blocked", "CheckpointRejected", "InputsMissing", "Paused", "RunCancelled", "Signal"]
