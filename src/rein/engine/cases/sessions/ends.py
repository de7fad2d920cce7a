"""A turn that ends without its run finishing: the run was refused before it could start, or
the process that recorded the turn died before starting it.

A turn is recorded before its run exists (its id answers ``turn/start``), so something must
say what became of a turn whose run never came, or its record reads ``inProgress`` for
good. That is a ``turn/ended`` event in the turn's own log (the id its digest question uses,
:mod:`rein.engine.cases.sessions.digest`), with the status and the coded error; the feed folds it
into the turn's one ``turn/completed`` (:mod:`rein.protocol.feed`).

Whether a turn without a run may still get one is told by its start lock, a store lock
named by the turn (:meth:`rein.store.base.Store.lock_run`): the process that records a turn
takes it before the turn is written and keeps it until the turn's run exists or its end is
recorded. The lock dies with its holder, so a conversation turn with no run, no end and a
free lock will never start: whoever reads it first records it ``interrupted`` (THREAD008).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from rein.core.ids import RunId
from rein.engine import events
from rein.errors import Refused, ReinError
from rein.store.base import Event, Store, ThreadTurnRow

TYPE = events.EventType.TURN_ENDED.value
NEVER_STARTED = "THREAD008"


def log_of(turn: ThreadTurnRow) -> RunId:
    """The id of the turn's own log (a forked turn's is its original's)."""
    return RunId(str(turn.input.get("forkedFrom") or turn.turn_id))


def of(store: Store, turn: ThreadTurnRow) -> Event | None:
    """The turn's recorded end, if any (the first one holds)."""
    found = store.events(log_of(turn), types=[TYPE])
    return found[0] if found else None


def error_of(exc: BaseException) -> dict[str, str]:
    """What a turn's end says of the error that ended it."""
    if isinstance(exc, ReinError):
        return {"code": exc.code, "message": exc.message, "hint": exc.hint or ""}
    return {"code": "REIN000", "message": f"{type(exc).__name__}: {exc}",
            "hint": "read the message; report it if it gives no way forward"}


def record(store: Store, turn: ThreadTurnRow, *, status: str, error: Mapping[str, str],
           now: str) -> Event:
    """Record that ``turn`` ended (``failed`` or ``interrupted``) with ``error``; the end
    already recorded when there is one, so that a turn ends once."""
    with store.atomic():
        earlier = of(store, turn)
        if earlier is not None:
            return earlier
        return events.append(store, log_of(turn), events.EventType.TURN_ENDED,
                             _payload(turn, status, error), now)


def _payload(turn: ThreadTurnRow, status: str, error: Mapping[str, str]) -> dict[str, Any]:
    return {"turn": turn.turn_id, "status": status, "error": dict(error)}


def _never_started(turn: ThreadTurnRow) -> dict[str, str]:
    return {"code": NEVER_STARTED,
            "message": f"turn {turn.turn_id} never started its run: the process serving it "
                       "stopped first, and nothing ran",
            "hint": "start the turn again (turn/start)"}


class StartLock:
    """The start lock of one turn, held from before the turn is recorded until released."""

    def __init__(self, store: Store, turn_id: str) -> None:
        self._held = contextlib.ExitStack()
        self._held.enter_context(store.lock_run(turn_id))

    def release(self) -> None:
        """Let go (again: nothing)."""
        self._held.close()


def settle(store: Store, turn: ThreadTurnRow, run_of: Callable[[ThreadTurnRow], Any],
           now: str, *, write: bool = True) -> Event | None:
    """The turn's end when it ended without its run finishing. A conversation turn whose
    run never began and never will (its start lock is free) is recorded ``interrupted``
    here, once; with ``write`` false (a reader that writes nothing) that end is only
    shown, as the first reader that may write will record it."""
    ended = of(store, turn)
    if ended is not None or turn.input.get("kind") == "graph":  # (a graph turn: its
        return ended                                             # digest question says)
    if turn.run_id is not None or run_of(turn) is not None:
        return None
    log = log_of(turn)
    if store.run_locked(log):  # its process is about to start it
        return None
    if not write:
        return Event(run_id=log, seq=0, type=TYPE, at=now,
                     payload=_payload(turn, "interrupted", _never_started(turn)))
    try:
        with store.lock_run(log):
            # Looked at again under the lock: the run may have begun, and the lock gone,
            # between the first look and the probe.
            again = {t.turn_id: t for t in store.thread_turns(turn.thread_id)}.get(
                turn.turn_id, turn)
            if again.run_id is not None or run_of(again) is not None:
                return None
            return record(store, turn, status="interrupted", error=_never_started(turn),
                          now=now)
    except Refused:  # another process took the lock meanwhile: it decides
        return of(store, turn)
