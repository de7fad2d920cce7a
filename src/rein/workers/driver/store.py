"""Where the driver worker keeps its turns: the run store's ``driver_turns`` table.

A *turn* is one instruction handed to an external agent (the driver) and the envelope that
answers it. Its token is derived from what is asked (run, node, attempt, kind), so asking
again for the same attempt finds the same row instead of creating a second one: ``rein next``
repeats an instruction, it never starts a new attempt.

Answering is a compare-and-set inside one write transaction that also appends the
``driver/answered`` event: an envelope is consumed exactly once, together with the record of
its consumption, and a second process answering the same turn sees it answered.

Everything goes through the public :class:`rein.store.base.Store` API, so the driver works
the same on the embedded SQLite store and on PostgreSQL. This module names the events and
their payloads; the store does the SQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.states import TurnStatus
from rein.store.base import DriverTurn, Store

Turn = DriverTurn  # the name the driver modules use

INSTRUCTED = "driver/instructed"
ANSWERED = "driver/answered"


def get_turn(store: Store, token: str) -> Turn | None:
    """The turn with ``token``, or ``None``."""
    return store.driver_turn(token)


def turns(store: Store, root_run_id: str, *, status: TurnStatus | None = None) -> list[Turn]:
    """The turns of one run family, oldest first (optionally only those in ``status``)."""
    return store.driver_turns(root_run_id, status=status)


def put_turn(store: Store, turn: Turn) -> Turn:
    """Insert ``turn`` unless its token exists; return the stored row (idempotent).

    The insert and its ``driver/instructed`` event are one transaction.
    """
    stored, _ = store.add_driver_turn(
        turn, event_type=INSTRUCTED,
        payload={"token": turn.token, "node": turn.node_key, "attempt": turn.attempt,
                 "kind": turn.kind})
    return stored


def answer_turn(store: Store, token: str, answer: Mapping[str, Any], at: str
                ) -> tuple[Turn, bool]:
    """Consume an envelope for the pending turn ``token``: ``(turn, changed)``.

    ``answer`` is ``{"envelope": ..., "checks": ...}``. The same envelope again is recognised
    and changes nothing (``changed`` is false); a different envelope for an answered turn is
    refused (``DRIVER_ANSWERED``). The update and its ``driver/answered`` event are one
    transaction.
    """
    from rein.errors import StoreError

    turn = store.driver_turn(token)
    if turn is None:
        raise StoreError(f"no driver instruction {token!r}", code="DRIVER404",
                         hint="print the pending instruction with `rein next`")
    checks = dict(answer.get("checks") or {})
    envelope = answer.get("envelope")
    status = envelope.get("status") if isinstance(envelope, Mapping) else None
    # node, attempt and run are fixed by the token: reading them before the write is safe.
    payload = {"token": token, "node": turn.node_key, "attempt": turn.attempt,
               "status": status, "writes_outside": list(checks.get("writes_outside") or [])}
    return store.answer_driver_turn(token, answer, at, event_type=ANSWERED, payload=payload)


__all__ = ["ANSWERED", "INSTRUCTED", "Turn", "TurnStatus", "answer_turn", "get_turn",
           "put_turn", "turns"]
