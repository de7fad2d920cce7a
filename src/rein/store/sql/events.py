"""The event log's rows: an event with the change it describes, and a run's events
(:class:`rein.store.base.Events`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from rein.core.ids import RunId
from rein.store.rows import Event, Transition
from rein.store.sql.connection import SQLConnection

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any


class EventsSQL(SQLConnection):
    """The event log: an event appended with the change it describes; a run's events."""

    def transition(self, run_id: RunId, event_type: str, payload: Mapping[str, Any], at: str,
                   change: Transition | None = None, *, hold: bool = False) -> Event:
        """Append one event and apply ``change``, atomically.

        ``hold``: leave the transaction open, so that the next write (whoever makes it)
        commits with this one, in one commit instead of two; :meth:`flush`, ``close`` and
        releasing a run lock commit it too, and a :meth:`batch` that writes commits it on
        its own first (one that writes nothing leaves it held). Until then nobody else sees
        it, and a crash loses it.

        That is only for a write followed, before anything awaits, by the next write it
        leads to: a node starting (its first attempt follows), an attempt ending (the node's
        end, or its next attempt), a node ending (the next map item starting, the edges of
        the step that follows). The engine commits every held write on the event loop's
        next turn at the latest (:func:`rein.engine.events.append`), so it is committed
        before a worker is called, a person is asked, a run pauses or ends, a listener or
        another process sees the event, or anything else outside the process can learn of
        it: a crash can only hit it in the stretch of code that runs without waiting, and
        then takes with it every write that came after it (they are in the same
        transaction, or wait behind it), never leaving what followed from the write
        committed without it. Lost that way, the step simply had not been taken: resuming
        takes it again (an attempt that was in flight runs again under its number).
        """
        with self._tx():
            event = self._append(run_id, event_type, payload, at)
            if change is not None:
                self._apply(run_id, change)
            if hold and self._depth == 1:  # inside atomic() or batch(): the group decides
                self._hold = True
            return event

    def events(self, run_id: RunId, *, after: int = 0,
               types: Sequence[str] | None = None) -> list[Event]:
        sql = "SELECT seq, type, payload, at FROM events WHERE run_id = ? AND seq > ?"
        values: list[Any] = [run_id, after]
        if types is not None:
            if not types:
                return []
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            values.extend(types)
        rows = self._x(sql + " ORDER BY seq", values).fetchall()
        return [Event(run_id=run_id, seq=r[0], type=r[1], payload=json.loads(r[2]), at=r[3])
                for r in rows]
