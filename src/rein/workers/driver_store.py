"""Where the driver worker keeps its turns: the ``driver_turns`` table of the run store.

A *turn* is one instruction handed to an external agent (the driver) and the envelope that
answers it. Its token is derived from what is asked (run, node, attempt, kind), so asking
again for the same attempt finds the same row instead of creating a second one: ``rein next``
repeats an instruction, it never starts a new attempt.

Answering is a compare-and-set inside one write transaction that also appends the
``driver/answered`` event: an envelope is consumed exactly once, together with the record of
its consumption, and a second process answering the same turn sees it answered.

Reads take a plain :class:`sqlite3.Connection` so that ``rein next`` can open the database
read-only, without the store's migration step; writes go through the run store.
"""

from __future__ import annotations

import enum
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rein.errors import Refused, StoreError


class TurnStatus(enum.StrEnum):
    """Where one driver turn stands."""

    PENDING = "pending"  # the instruction is out; no envelope accepted yet
    ANSWERED = "answered"  # an envelope was accepted (consumed) for it


@dataclass(frozen=True, kw_only=True, slots=True)
class Turn:
    """One instruction and, once answered, the envelope and what rein measured on submit."""

    token: str
    run_id: str  # the run the node lives in (a subgraph's child run, or the top-level run)
    root_run_id: str  # the top-level run: what ``rein next`` and ``rein submit`` address
    node_key: str
    attempt: int
    kind: str  # task, decision or judge
    status: TurnStatus
    instruction: Mapping[str, Any]
    baseline: Mapping[str, Any]  # the workspace snapshot taken when the instruction was issued
    created_at: str
    answer: Mapping[str, Any] | None = None  # {"envelope": ..., "checks": ...}
    answered_at: str | None = None


_COLUMNS = ("token, run_id, root_run_id, node_key, attempt, kind, status, instruction, "
            "baseline, answer, created_at, answered_at")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _turn(row: tuple[Any, ...]) -> Turn:
    return Turn(token=row[0], run_id=row[1], root_run_id=row[2], node_key=row[3],
                attempt=int(row[4]), kind=row[5], status=TurnStatus(row[6]),
                instruction=json.loads(row[7]), baseline=json.loads(row[8]),
                answer=None if row[9] is None else json.loads(row[9]),
                created_at=row[10], answered_at=row[11])


def has_table(conn: sqlite3.Connection) -> bool:
    """Whether the database has the driver table (a store of schema version 1 has not)."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='driver_turns'"
                       ).fetchone()
    return row is not None


def get_turn(conn: sqlite3.Connection, token: str) -> Turn | None:
    """The turn with ``token``, or ``None``."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM driver_turns WHERE token = ?", (token,)
                       ).fetchone()
    return None if row is None else _turn(row)


def turns(conn: sqlite3.Connection, root_run_id: str, *,
          status: TurnStatus | None = None) -> list[Turn]:
    """The turns of one run family, oldest first (optionally only those in ``status``)."""
    sql = f"SELECT {_COLUMNS} FROM driver_turns WHERE root_run_id = ?"
    args: list[Any] = [root_run_id]
    if status is not None:
        sql += " AND status = ?"
        args.append(status.value)
    return [_turn(r) for r in conn.execute(sql + " ORDER BY rowid", args).fetchall()]


def put_turn(store: Any, turn: Turn) -> Turn:
    """Insert ``turn`` unless its token exists; return the stored row (idempotent).

    ``store`` is a :class:`rein.store.sqlite.SQLiteStore`; the insert and its
    ``driver/instructed`` event are one transaction.
    """
    with store._tx():
        conn = store._db
        existing = get_turn(conn, turn.token)
        if existing is not None:
            return existing
        conn.execute(
            f"INSERT INTO driver_turns ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (turn.token, turn.run_id, turn.root_run_id, turn.node_key, turn.attempt,
             turn.kind, turn.status.value, _dump(dict(turn.instruction)),
             _dump(dict(turn.baseline)), None, turn.created_at, None))
        store._append(turn.run_id, "driver/instructed",
                      {"token": turn.token, "node": turn.node_key, "attempt": turn.attempt,
                       "kind": turn.kind}, turn.created_at)
        return turn


def answer_turn(store: Any, token: str, answer: Mapping[str, Any], at: str
                ) -> tuple[Turn, bool]:
    """Consume an envelope for the pending turn ``token``: ``(turn, changed)``.

    The same answer again is recognised and changes nothing (``changed`` is false); a
    different answer to an answered turn is refused. The update and its ``driver/answered``
    event are one transaction.
    """
    with store._tx():
        conn = store._db
        turn = get_turn(conn, token)
        if turn is None:
            raise StoreError(f"no driver instruction {token!r}", code="DRIVER404",
                             hint="print the pending instruction with `rein next`")
        if turn.status is TurnStatus.ANSWERED:
            same = turn.answer is not None and _dump(dict(turn.answer).get("envelope")) == \
                _dump(dict(answer).get("envelope"))
            if same:
                return turn, False
            raise Refused(f"instruction {token} was already answered with another envelope",
                          code="DRIVER_ANSWERED",
                          hint="an answer cannot be changed; print the current instruction "
                               "with `rein next`")
        conn.execute("UPDATE driver_turns SET status = ?, answer = ?, answered_at = ? "
                     "WHERE token = ? AND status = ?",
                     (TurnStatus.ANSWERED.value, _dump(dict(answer)), at, token,
                      TurnStatus.PENDING.value))
        checks = dict(answer.get("checks") or {})
        store._append(turn.run_id, "driver/answered",
                      {"token": token, "node": turn.node_key, "attempt": turn.attempt,
                       "status": (answer.get("envelope") or {}).get("status"),
                       "writes_outside": list(checks.get("writes_outside") or [])}, at)
        updated = Turn(token=turn.token, run_id=turn.run_id, root_run_id=turn.root_run_id,
                       node_key=turn.node_key, attempt=turn.attempt, kind=turn.kind,
                       status=TurnStatus.ANSWERED, instruction=turn.instruction,
                       baseline=turn.baseline, created_at=turn.created_at,
                       answer=dict(answer), answered_at=at)
        return updated, True


def connect_read_only(path: str) -> sqlite3.Connection | None:
    """A read-only connection to the run store at ``path``, or ``None`` when it is missing."""
    try:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
    except sqlite3.Error:
        return None


__all__ = ["Turn", "TurnStatus", "answer_turn", "connect_read_only", "get_turn", "has_table",
           "put_turn", "turns"]
