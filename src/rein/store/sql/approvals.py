"""The approval queue's rows and their answers (:class:`rein.store.base.ApprovalQueue`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from rein.core.ids import ApprovalId, RunId
from rein.core.states import ApprovalKind, ApprovalStatus
from rein.errors import Refused, StoreError
from rein.store.rows import ApprovalRow, Transition
from rein.store.sql.events import EventsSQL

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any


class ApprovalsSQL(EventsSQL):
    """The approval queue: entries read, and answered with their event."""

    _APPROVAL_COLUMNS = ("approval_id, run_id, key, kind, status, digest, request, answer,"
                         " created_at, answered_at")

    @staticmethod
    def _approval(r: tuple[Any, ...]) -> ApprovalRow:
        return ApprovalRow(
            approval_id=ApprovalId(r[0]), run_id=RunId(r[1]), key=r[2], kind=ApprovalKind(r[3]),
            status=ApprovalStatus(r[4]), digest=r[5], request=json.loads(r[6]),
            answer=None if r[7] is None else json.loads(r[7]), created_at=r[8],
            answered_at=r[9])

    def approvals(self, *, run_id: RunId | None = None, status: ApprovalStatus | None = None,
                  run_ids: Sequence[str] | None = None) -> list[ApprovalRow]:
        clauses: list[str] = []
        values: list[Any] = []
        if run_id is not None:
            clauses.append("run_id = ?")
            values.append(run_id)
        if status is not None:
            clauses.append("status = ?")
            values.append(status.value)
        if run_ids is None:
            return [row for _, row in self._queued(clauses, values)]
        ids = list(dict.fromkeys(run_ids))
        got: list[tuple[Any, ApprovalRow]] = []
        for start in range(0, len(ids), 500):  # below every backend's parameter limit
            part = ids[start:start + 500]
            got.extend(self._queued([*clauses, f"run_id IN ({', '.join('?' * len(part))})"],
                                    [*values, *part]))
        if len(ids) > 500:  # several queries: their rows merged in the queue's order
            got.sort(key=lambda x: x[0])
        return [row for _, row in got]

    def _queued(self, clauses: list[str], values: list[Any]
                ) -> list[tuple[Any, ApprovalRow]]:
        """The entries ``clauses`` choose, in the queue's order, each with its place."""
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._x(f"SELECT {self._APPROVAL_COLUMNS}, {self.approval_order} FROM approvals"
                       f"{where} ORDER BY {self.approval_order}", values).fetchall()
        return [(r[10], self._approval(r)) for r in rows]

    def get_approval(self, approval_id: str) -> ApprovalRow | None:
        row = self._x(f"SELECT {self._APPROVAL_COLUMNS} FROM approvals WHERE approval_id = ?",
                      (approval_id,)).fetchone()
        return None if row is None else self._approval(row)

    def answer_approval(self, approval_id: str, status: ApprovalStatus,
                        answer: Mapping[str, Any], at: str, *, event_type: str,
                        payload: Mapping[str, Any]) -> tuple[ApprovalRow, bool]:
        """Answer a pending approval with the event the caller names. Returns the row and
        whether this call changed it.

        Answering again with the same status is a no-op (idempotent, no event); a different
        answer to an already answered approval is refused.
        """
        answer = self.redact(dict(answer))
        with self._tx():
            row = self.get_approval(approval_id)
            if row is None:
                raise StoreError(f"no approval {approval_id!r}", code="APPROVAL404",
                                 hint="list the queue with `rein approvals list`")
            self._serialize_once(row.run_id)
            row = self.get_approval(approval_id)  # again, now that no one else can write it
            assert row is not None
            if row.status is not ApprovalStatus.PENDING:
                if row.status is status:
                    return row, False
                raise Refused(
                    f"approval {approval_id} was already answered: {row.status.value}",
                    code="APPROVAL_ANSWERED",
                    hint="an answer cannot be changed; start a new run to decide differently")
            updated = ApprovalRow(
                approval_id=row.approval_id, run_id=row.run_id, key=row.key, kind=row.kind,
                status=status, digest=row.digest, request=row.request,
                created_at=row.created_at, answer=answer, answered_at=at)
            self._append(row.run_id, event_type, payload, at)
            self._apply(row.run_id, Transition(approval=updated))
            return updated, True
