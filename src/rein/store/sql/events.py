"""The event log: every event with the state change it describes, and a run's events
(:class:`rein.store.base.Events`).

The event log owns its write path. An event is appended with the change it describes in
one transaction: a run's creation (:meth:`EventsSQL.create_run`, with ``run/started``), a
node row, a run's status and fields, an approval (:meth:`EventsSQL.transition`); the roles
whose own rows carry an event (the approval queue's answers, the driver's turns) append it
here too (:meth:`EventsSQL._append`). The events and node rows of the open transaction are
held back and written in one statement each, before any other statement runs and at commit
(:meth:`EventsSQL._write_due`, which the connection calls).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import chain

from rein.core.frozen import maker
from rein.core.ids import RunId
from rein.formats.redaction import redact
from rein.store.rows import Event, NodeRow, RunRow, Transition
from rein.store.sql.connection import SQLConnection, dump
from rein.store.sql.runs import COLUMNS, figures_of

ROWS_PER_STATEMENT = 100  # a multi-row INSERT's rows: SQLite allows 32766 parameters

# A node row: its fields, its seq (that of the event it was first written with: a new row
# comes after every row of its run, and an existing row keeps its own), its record and the
# figures of its attempts (rein.store.sql.runs.figures_of).
_NODE_INSERT = ("INSERT INTO nodes (run_id, node_key, node_id, scope_path, type, status, seq,"
                f" record, {', '.join(COLUMNS)}) VALUES ")
_NODE_VALUES = f"(?, ?, ?, ?, ?, ?, ?, ?, {', '.join('?' * len(COLUMNS))})"
_NODE_UPDATE = (" ON CONFLICT (run_id, node_key) DO UPDATE SET status = excluded.status,"
                " record = excluded.record, "
                + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS))


def _parts(rows: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    if len(rows) <= ROWS_PER_STATEMENT:
        return [rows] if rows else []
    return [rows[i:i + ROWS_PER_STATEMENT] for i in range(0, len(rows), ROWS_PER_STATEMENT)]


def _events_insert(count: int) -> str:
    """The statement that inserts ``count`` events (made once per count)."""
    sql = _EVENTS_INSERT.get(count)
    if sql is None:
        sql = _EVENTS_INSERT[count] = ("INSERT INTO events (run_id, seq, type, payload, at)"
                                       " VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * count))
    return sql


_EVENTS_INSERT: dict[int, str] = {}
_event = maker(Event)  # an event of the write path: a dozen per node

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any


class EventsSQL(SQLConnection):
    """The event log: an event appended with the change it describes; a run's events."""

    def __init__(self) -> None:
        super().__init__()
        # Inside the open transaction only: the last event seq appended per run. It holds
        # until commit, because this transaction excludes every other writer of the run
        # until then.
        self._seq: dict[str, int] = {}
        # The open transaction's events and node rows, not yet written: a later row of the
        # same node replaces its earlier one (a node's start and its first attempt's, an
        # attempt's end and the node's, commit together), and all are written in one
        # statement each before any other statement or the commit (see _x).
        self._events_due: list[tuple[Any, ...]] = []
        # (run, node key) -> the row and the seq of the event it was first held with
        self._node_rows: dict[tuple[str, str], tuple[NodeRow, int]] = {}

    # -- writes ---------------------------------------------------------------------------

    def create_run(self, run: RunRow, *, event_type: str, payload: Mapping[str, Any]) -> Event:
        """Insert a run and its first event in one transaction."""
        binding, summary = self.redact(dict(run.binding)), self.redact(dict(run.summary))
        with self._tx():
            self._serialize_once("")  # ``created`` is a store-wide order
            created = self._x("SELECT COALESCE(MAX(created), 0) + 1 FROM runs").fetchone()[0]
            where = run.workspace
            self._x(
                "INSERT INTO runs (run_id, parent_run_id, parent_node_key, graph_id, graph_path,"
                " graph_digest, status, started_at, finished_at, binding, summary, created,"
                " workspace_id, workspace_path, workspace_host)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run.run_id, run.parent_run_id, run.parent_node_key, run.graph_id,
                 run.graph_path, run.graph_digest, run.status.value, run.started_at,
                 run.finished_at, dump(binding), dump(summary), created,
                 *((None, None, None) if where is None else (where.id, where.path, where.host))),
            )
            return self._append(run.run_id, event_type, payload, run.started_at)

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
        if self._depth and self._begun and not self._broken and self._failed is None:
            # Joining a transaction that is open and sound (inside atomic() or batch(), the
            # usual case: a node's events): what _enter() and _exit() would do comes down to
            # marking it broken should this write fail part-way.
            try:
                event = self._append(run_id, event_type, payload, at)
                if change is not None:
                    self._apply(run_id, change)
            except BaseException:
                self._broken = True
                raise
            return event
        nested = self._enter()  # _tx(), spelled out: this runs once per event
        try:
            event = self._append(run_id, event_type, payload, at)
            if change is not None:
                self._apply(run_id, change)
            if hold and self._depth == 1:  # inside atomic() or batch(): the group decides
                self._hold = True
        except BaseException:
            self._exit(nested, failed=True)
            raise
        self._exit(nested, failed=False)
        return event

    def append_all(self, run_id: RunId, event_type: str,
                   payloads: Sequence[Mapping[str, Any]], at: str) -> list[Event]:
        """Append several events of one type, in order, atomically, with no state change:
        what one step finds at once (the edges out of a node that ended). Each is an event
        of its own, as if appended one by one in one transaction; a step that found nothing
        writes nothing."""
        if not payloads:
            return []
        with self._tx():  # once per step, not per event: the bracket as is
            return self._append_all(run_id, event_type, payloads, at)

    # -- the write path -------------------------------------------------------------------

    def _append_all(self, run_id: str, event_type: str,
                    payloads: Sequence[Mapping[str, Any]], at: str) -> list[Event]:
        """:meth:`_append` for several events of one type, the run's work done once."""
        first = self._append(run_id, event_type, payloads[0], at)
        seq = first.seq
        secrets = self.secrets
        due, appended, events = self._events_due, self._appended, [first]
        for payload in payloads[1:]:
            seq += 1
            payload = redact(payload, secrets) if secrets.pairs else dict(payload)
            due.append((run_id, seq, event_type, dump(payload), at))
            event = _event(run_id, seq, event_type, payload, at)
            appended.append(event)
            events.append(event)
        self._seq[run_id] = seq
        return events

    def _append(self, run_id: str, event_type: str, payload: Mapping[str, Any], at: str) -> Event:
        """Append one event inside the open transaction (held back until the next statement
        or the commit): the one insert of an event."""
        if run_id not in self._serialized:
            self._serialize_once(run_id)
        last = self._seq.get(run_id)
        if last is None:
            # Read inside the transaction: another process (an approval answer) may have
            # appended before it began; after that, nobody else can until it commits.
            # Neither statement reads the nodes table: a node row held back may wait.
            row = self._execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?",
                                (run_id,)).fetchone()
            last = int(row[0])
        seq = last + 1
        secrets = self.secrets
        payload = redact(payload, secrets) if secrets.pairs else dict(payload)
        self._events_due.append((run_id, seq, event_type, dump(payload), at))
        self._due = True
        self._seq[run_id] = seq
        event = _event(run_id, seq, event_type, payload, at)
        self._appended.append(event)
        return event

    def _apply(self, run_id: str, change: Transition) -> None:
        """Apply the state an event describes, inside the open transaction."""
        if change.node is not None:
            # Held back until another statement or the commit, and rendered then: replaced
            # by a later row of the same node, it is never rendered nor written (the row
            # that commits is the same, with the seq of the event that first held it).
            key = (run_id, change.node.node_key)
            earlier = self._node_rows.get(key)
            self._node_rows[key] = (change.node, self._seq[run_id] if earlier is None
                                    else earlier[1])
            self._due = True
        sets: list[str] = []
        values: list[Any] = []
        for column, value in (
            ("status", None if change.run_status is None else change.run_status.value),
            ("finished_at", change.finished_at),
            ("summary", None if change.summary is None
             else dump(self.redact(dict(change.summary)))),
            ("binding", None if change.binding is None
             else dump(self.redact(dict(change.binding)))),
        ):
            if value is not None:
                sets.append(f"{column} = ?")
                values.append(value)
        if sets:
            self._x(f"UPDATE runs SET {', '.join(sets)} WHERE run_id = ?", (*values, run_id))
        if change.approval is not None:
            a = change.approval
            self._x(
                "INSERT INTO approvals (approval_id, run_id, key, kind, status, digest, request,"
                " answer, created_at, answered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (approval_id) DO UPDATE SET status = excluded.status,"
                " answer = excluded.answer, answered_at = excluded.answered_at,"
                " digest = excluded.digest, request = excluded.request",
                (a.approval_id, a.run_id, a.key, a.kind.value, a.status.value, a.digest,
                 dump(self.redact(dict(a.request))),
                 None if a.answer is None else dump(self.redact(dict(a.answer))),
                 a.created_at, a.answered_at),
            )

    def _write_due(self) -> None:
        """Write the events and node rows held back, one statement for each kind (per
        :data:`ROWS_PER_STATEMENT`). A new node row takes the ``seq`` of the event it was
        first held with (the run's nodes in the order they first appeared, after every row
        of the run written before); a row that exists keeps its own."""
        events, self._events_due = self._events_due, []
        held, self._node_rows = self._node_rows, {}
        self._due = False
        # The figures the usage totals read go in columns of the same row, from the record
        # as stored (rein.store.sql.runs.figures_of).
        rows = []
        for (run_id, _), (n, seq) in held.items():
            record = self.redact(dict(n.record))
            status = n.status.value
            rows.append((run_id, n.node_key, n.node_id, n.scope_path, n.type, status, seq,
                         dump(record), *figures_of(record, status)))
        for part in _parts(events):
            self._execute(_events_insert(len(part)), list(chain.from_iterable(part)))
        for part in _parts(rows):
            self._execute(_NODE_INSERT + ", ".join([_NODE_VALUES] * len(part)) + _NODE_UPDATE,
                          list(chain.from_iterable(part)))

    def _forget_due(self) -> None:
        self._seq.clear()
        self._events_due, self._node_rows, self._due = [], {}, False

    # -- reads ----------------------------------------------------------------------------

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
