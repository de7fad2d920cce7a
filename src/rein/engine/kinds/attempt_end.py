"""How one attempt ended, as a typed value and as the fields of its record.

An attempt object of the run record (``node_run.attempts[]``) gets its closing fields when
the attempt ends: ``status``, ``finished_at``, the ``success`` outcome, and for a failure
``error`` (``"<failure class>: <message>"``), ``x-rein-failure-class`` and the outputs it
produced (``x-rein-outputs``, redacted ones left out). :class:`AttemptEnd` is those fields
typed: :meth:`AttemptEnd.to_record` writes them and :meth:`AttemptEnd.from_record` reads them
back, so a run continued by replay (another process, after a pause) takes an ended attempt
as it ended, and the next attempt's feedback comes from the same value either way.

The record keeps the failure's message only inside ``error``, after the failure class the
record also holds on its own (``x-rein-failure-class``): :meth:`from_record` takes the class
from that field and the message as what ``error`` says after it, the one inverse of
:meth:`to_record`, instead of splitting the text at its first colon.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.frozen import Frozen, field
from rein.core.states import AttemptStatus

__all__ = ["AttemptEnd", "error_text"]


def error_text(failure: FailureClass, message: str | None) -> str:
    """The record's ``error`` of a failed attempt: its class, then its message."""
    return f"{failure.value}: {message or ''}".rstrip(": ")


class AttemptEnd(Frozen):
    """The closing fields of one attempt's record."""

    attempt: int
    status: AttemptStatus
    finished_at: str
    failure: FailureClass | None = None
    message: str | None = None  # why it failed, as the record's ``error`` says after the class
    success: Mapping[str, Any] | None = None  # the success outcome's record, when judged
    outputs: Mapping[str, Any] = field(default_factory=dict)  # kept when it failed

    def to_record(self) -> dict[str, Any]:
        """The fields, in the order the run record has them (written into the attempt's
        object with ``dict.update``, which keeps a field already there in its place)."""
        rec: dict[str, Any] = {"status": self.status.value, "finished_at": self.finished_at}
        if self.success is not None:
            rec["success"] = dict(self.success)
        if self.failure is not None:
            rec["error"] = error_text(self.failure, self.message)
            rec["x-rein-failure-class"] = self.failure.value
            if self.outputs:
                rec["x-rein-outputs"] = dict(self.outputs)
        return rec

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> AttemptEnd | None:
        """The end an attempt's record holds; ``None`` while it is in flight. A failure the
        record does not classify is a failed criterion (records written before the class
        was recorded)."""
        status = rec.get("status")
        if status is None:
            return None
        failure = None
        if status != AttemptStatus.SUCCEEDED.value:
            failure = FailureClass(rec.get("x-rein-failure-class") or "criteria_failed")
        return cls(attempt=int(rec["attempt"]), status=AttemptStatus(status),
                   finished_at=str(rec.get("finished_at") or ""), failure=failure,
                   message=_message(failure, rec.get("error")),
                   success=rec.get("success"), outputs=dict(rec.get("x-rein-outputs") or {}))


def _message(failure: FailureClass | None, error: Any) -> str | None:
    """What :func:`error_text` wrote after the class; an ``error`` that does not start with
    the recorded class (written by hand, or by an older rein) is the message as a whole."""
    if failure is None or not error:
        return None
    text = str(error)
    if text == failure.value:
        return None
    prefix = f"{failure.value}: "
    return text.removeprefix(prefix) if text.startswith(prefix) else text
