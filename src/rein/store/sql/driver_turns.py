"""A driver's instructions and the envelopes that answer them
(:class:`rein.store.base.DriverTurns`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from rein.core.ids import RunId
from rein.core.states import TurnStatus
from rein.errors import Refused, StoreError
from rein.store.lazy_json import LazyObject
from rein.store.rows import DriverTurn
from rein.store.sql.connection import dump, dump_ordered
from rein.store.sql.events import EventsSQL

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any


class DriverTurnsSQL(EventsSQL):
    """A driver's instructions, and the envelopes that answer them."""

    # -- driver turns ---------------------------------------------------------------------

    _TURN_COLUMNS = ("token, run_id, root_run_id, node_key, attempt, kind, status, instruction,"
                     " baseline, answer, created_at, answered_at")

    @staticmethod
    def _turn(r: tuple[Any, ...]) -> DriverTurn:
        return DriverTurn(
            token=r[0], run_id=RunId(r[1]), root_run_id=RunId(r[2]), node_key=r[3],
            attempt=int(r[4]), kind=r[5], status=TurnStatus(r[6]),
            # The snapshot is parsed as far as it is read: most reads want only its root.
            instruction=json.loads(r[7]), baseline=LazyObject(r[8]),
            answer=None if r[9] is None else json.loads(r[9]), created_at=r[10],
            answered_at=r[11])

    def driver_turn(self, token: str) -> DriverTurn | None:
        """The turn with ``token``, or ``None``."""
        row = self._x(f"SELECT {self._TURN_COLUMNS} FROM driver_turns WHERE token = ?",
                      (token,)).fetchone()
        return None if row is None else self._turn(row)

    def driver_turns(self, root_run_id: str, *, status: TurnStatus | None = None
                     ) -> list[DriverTurn]:
        """The turns of one run family, oldest first (only those in ``status`` if given)."""
        sql = f"SELECT {self._TURN_COLUMNS} FROM driver_turns WHERE root_run_id = ?"
        values: list[Any] = [root_run_id]
        if status is not None:
            sql += " AND status = ?"
            values.append(status.value)
        rows = self._x(sql + " ORDER BY ord, token", values).fetchall()
        return [self._turn(r) for r in rows]

    def add_driver_turn(self, turn: DriverTurn, *, event_type: str,
                        payload: Mapping[str, Any]) -> tuple[DriverTurn, bool]:
        """Insert ``turn`` with its event, atomically, unless its token exists: returns the
        stored row and whether this call inserted it (asking twice never adds a turn)."""
        turn = self._redacted_turn(turn)
        with self._tx():
            # ``ord`` is MAX + 1 within the family: keep other writers of the family out.
            self._serialize_once(turn.root_run_id)
            existing = self.driver_turn(turn.token)
            if existing is not None:
                return existing, False
            self._x(f"INSERT INTO driver_turns ({self._TURN_COLUMNS}, ord) VALUES"
                    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(ord), 0) + 1"
                    " FROM driver_turns WHERE root_run_id = ?))",
                    (turn.token, turn.run_id, turn.root_run_id, turn.node_key, turn.attempt,
                     turn.kind, turn.status.value, dump_ordered(turn.instruction),
                     dump_ordered(turn.baseline),
                     None if turn.answer is None else dump_ordered(turn.answer),
                     turn.created_at, turn.answered_at, turn.root_run_id))
            self._append(turn.run_id, event_type, payload, turn.created_at)
            return turn, True

    def answer_driver_turn(self, token: str, answer: Mapping[str, Any], at: str, *,
                           event_type: str, payload: Mapping[str, Any]
                           ) -> tuple[DriverTurn, bool]:
        """Consume an envelope for the pending turn ``token`` with its event, atomically.

        A compare-and-set: of concurrent answers exactly one changes the row. Returns
        ``(turn, changed)``; the same envelope again (``answer["envelope"]``) changes nothing,
        another envelope for an answered turn is refused (``DRIVER_ANSWERED``).
        """
        answer = self.redact(dict(answer))  # compared as stored: a resent envelope matches
        with self._tx():
            turn = self.driver_turn(token)
            if turn is None:
                raise StoreError(f"no driver instruction {token!r}", code="DRIVER404",
                                 hint="print the pending instruction with `rein next`")
            self._serialize_once(turn.run_id)
            turn = self.driver_turn(token)  # again, now that no one else can write it
            assert turn is not None
            if turn.status is TurnStatus.ANSWERED:
                if dump((turn.answer or {}).get("envelope")) == dump(answer.get("envelope")):
                    return turn, False
                raise Refused(f"instruction {token} was already answered with another envelope",
                              code="DRIVER_ANSWERED",
                              hint="an answer cannot be changed; print the current "
                                   "instruction with `rein next`")
            self._x("UPDATE driver_turns SET status = ?, answer = ?, answered_at = ?"
                    " WHERE token = ? AND status = ?",
                    (TurnStatus.ANSWERED.value, dump_ordered(answer), at, token,
                     TurnStatus.PENDING.value))
            self._append(turn.run_id, event_type, payload, at)
            return DriverTurn(
                token=turn.token, run_id=turn.run_id, root_run_id=turn.root_run_id,
                node_key=turn.node_key, attempt=turn.attempt, kind=turn.kind,
                status=TurnStatus.ANSWERED, instruction=turn.instruction,
                baseline=turn.baseline, created_at=turn.created_at, answer=dict(answer),
                answered_at=at), True

    def _redacted_turn(self, turn: DriverTurn) -> DriverTurn:
        return turn.replace(
            instruction=self.redact(dict(turn.instruction)),
            baseline=self.redact(dict(turn.baseline)),
            answer=None if turn.answer is None else self.redact(dict(turn.answer)))
