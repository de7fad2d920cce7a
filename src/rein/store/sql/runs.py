"""Runs and their node rows, read, and the removal of whole runs
(:class:`rein.store.base.Runs`).

A run is created with its ``run/started`` event, and changed with the event that describes
the change, by the event log (:class:`rein.store.sql.events.EventsSQL`). The run lock every
backend holds its own way is the connection's
(:meth:`rein.store.sql.connection.SQLConnection.lock_run`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence

from rein.core.ids import NodeKey, RunId
from rein.core.states import NodeStatus, RunStatus
from rein.store.rows import (
    MEASURED,
    SUMMED,
    AttemptFacts,
    NodeFacts,
    NodeRow,
    RunRow,
    WorkspaceRef,
)
from rein.store.sql.connection import SQLConnection, dump
from rein.store.sql.node_figures import (
    DRIVEN,
    DRIVER_TOKEN,
    FIGURE_COLUMNS,
    READ_WHOLE,
    STARTED,
    UNKNOWN,
    USAGE,
    USAGE_SOURCE,
    as_given,
)

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any


def facts_of(row: NodeRow) -> Iterator[AttemptFacts]:
    """The :class:`AttemptFacts` of one node row, one per attempt (or one for a node
    without attempts), from its whole record."""
    started = bool(row.record.get("started_at"))
    attempts = row.record.get("attempts") or []
    if not attempts:
        yield AttemptFacts(type=row.type, status=row.status, started=started)
        return
    for i, a in enumerate(attempts):
        used = a.get("usage")
        token = a.get(DRIVER_TOKEN)
        yield AttemptFacts(type=row.type, status=row.status, started=started,
                           attempt=min(i, 1), attempt_status=scalar(a.get("status")),
                           usage=figures(used) if isinstance(used, Mapping) else None,
                           driver_token=None if token is None else str(token),
                           usage_source=scalar(a.get(USAGE_SOURCE)))


def figures(usage: Mapping[str, Any]) -> dict[str, Any]:
    """The figures of :data:`SUMMED` in one attempt's ``usage``: each a number, or None."""
    return {k: v if _number(v) else None for k in SUMMED for v in (usage.get(k),)}


def grouped(facts: Iterable[AttemptFacts]) -> Iterator[AttemptFacts]:
    """``facts`` alike in every field but ``count`` and the values of their figures taken
    together (:class:`AttemptFacts`), their figures summed in the order given; in the order
    each group first appears."""
    groups: dict[tuple[Any, ...], AttemptFacts] = {}
    for f in facts:
        given = None if f.usage is None else tuple(v is None for v in f.usage.values())
        key = (f.type, f.status, f.started, f.attempt, f.attempt_status, f.driver_token,
               f.usage_source, given)
        if (g := groups.get(key)) is None:
            groups[key] = f
            continue
        usage = None if g.usage is None or f.usage is None else {
            k: None if v is None else v + f.usage[k] for k, v in g.usage.items()}
        groups[key] = g.replace(count=g.count + f.count, usage=usage)
    yield from groups.values()


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def scalar(value: Any) -> Any:
    """A record's field as a fact: an object or an array as its JSON text (hashable)."""
    return dump(value) if isinstance(value, Mapping | list) else value


# A run's rows grouped by what their columns say, in the order of the index nodes_facts (no
# sort), their figures summed: a handful of rows back, no record read.
_SUMMED = ("SELECT type, status, facts, COUNT(*), SUM(attempts), SUM(attempts_rerun), "
           + ", ".join(f"SUM({c})" for c in FIGURE_COLUMNS)
           + " FROM nodes WHERE run_id = ? GROUP BY type, status, facts")
# The rows whose records the totals read instead, found by the partial index
# nodes_by_record (in no order: ORDER BY would have the run's rows read to sort them).
_READ_WHOLE = ("SELECT node_key, node_id, scope_path, type, status, seq, record FROM nodes"
               f" WHERE run_id = ? AND {READ_WHOLE}")


class RunsSQL(SQLConnection):
    """Runs and their node rows, read; the removal of whole runs."""

    # -- removal --------------------------------------------------------------------------

    # Every table that holds rows of a run, and the column that names the run.
    _RUN_TABLES = (("events", "run_id"), ("nodes", "run_id"), ("approvals", "run_id"),
                   ("driver_turns", "run_id"), ("processes", "run_id"), ("runs", "run_id"))

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Remove these runs and everything stored for them, in one transaction; the number
        of runs removed. The caller names whole families (a run with its child runs) and
        holds their locks: nothing here decides what may go."""
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return 0
        removed = 0
        with self._tx():
            for start in range(0, len(ids), 500):  # below every backend's parameter limit
                chunk = ids[start:start + 500]
                marks = ", ".join("?" for _ in chunk)
                removed += int(self._x(f"SELECT COUNT(*) FROM runs WHERE run_id IN ({marks})",
                                       chunk).fetchone()[0])
                for table, column in self._RUN_TABLES:
                    self._x(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)
        return removed

    # -- reads ----------------------------------------------------------------------------

    _RUN_COLUMNS = ("run_id, parent_run_id, parent_node_key, graph_id, graph_path, graph_digest,"
                    " status, started_at, finished_at, binding, summary, workspace_id,"
                    " workspace_path, workspace_host")

    @staticmethod
    def _run(row: tuple[Any, ...]) -> RunRow:
        return RunRow(
            run_id=RunId(row[0]), parent_run_id=None if row[1] is None else RunId(row[1]),
            parent_node_key=None if row[2] is None else NodeKey(row[2]), graph_id=row[3],
            graph_path=row[4], graph_digest=row[5], status=RunStatus(row[6]),
            started_at=row[7], finished_at=row[8], binding=json.loads(row[9]),
            summary=json.loads(row[10]),
            workspace=None if row[11] is None else WorkspaceRef(
                id=row[11], path=row[12] or "", host=row[13] or ""))

    def get_run(self, run_id: str) -> RunRow | None:
        row = self._x(f"SELECT {self._RUN_COLUMNS} FROM runs WHERE run_id = ?",
                      (run_id,)).fetchone()
        return None if row is None else self._run(row)

    def list_runs(self, *, include_children: bool = False,
                  workspaces: Sequence[str | None] | None = None) -> list[RunRow]:
        clauses = [] if include_children else ["parent_run_id IS NULL"]
        values: list[Any] = []
        if workspaces is not None:
            ids = [w for w in workspaces if w is not None]
            either = [f"workspace_id IN ({', '.join('?' * len(ids))})"] if ids else []
            if None in workspaces:
                either.append("workspace_id IS NULL")
            clauses.append(f"({' OR '.join(either)})" if either else "1 = 0")
            values.extend(ids)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._x(f"SELECT {self._RUN_COLUMNS} FROM runs{where} ORDER BY created DESC",
                       values).fetchall()
        return [self._run(r) for r in rows]

    def child_runs(self, parent_run_id: RunId) -> list[RunRow]:
        rows = self._x(f"SELECT {self._RUN_COLUMNS} FROM runs WHERE parent_run_id = ?"
                       " ORDER BY created", (parent_run_id,)).fetchall()
        return [self._run(r) for r in rows]

    def nodes(self, run_id: RunId) -> list[NodeRow]:
        rows = self._x("SELECT node_key, node_id, scope_path, type, status, seq, record"
                       " FROM nodes WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        return [NodeRow(run_id=run_id, node_key=NodeKey(r[0]), node_id=r[1], scope_path=r[2],
                        type=r[3], status=NodeStatus(r[4]), seq=r[5], record=json.loads(r[6]))
                for r in rows]

    def node_counts(self, run_id: RunId) -> dict[tuple[str, NodeStatus], int]:
        """How many node rows of each (type, status) a run has: counted by the database,
        no record read."""
        rows = self._x("SELECT type, status, COUNT(*) FROM nodes WHERE run_id = ?"
                       " GROUP BY type, status", (run_id,)).fetchall()
        return {(r[0], NodeStatus(r[1])): int(r[2]) for r in rows}

    def iter_nodes(self, run_id: RunId, *, exclude: Sequence[NodeStatus] = (),
                   records: bool = True) -> Iterator[NodeRow]:
        """The node rows of a run in order, read a few at a time (memory bounded whatever
        the run's size), leaving out those of the ``exclude`` statuses; ``records=False``
        leaves each row's record empty (none is read)."""
        sql = (f"SELECT node_key, node_id, scope_path, type, status, seq,"
               f" {'record' if records else 'NULL'} FROM nodes WHERE run_id = ?")
        values: list[Any] = [run_id]
        if exclude:
            sql += f" AND status NOT IN ({', '.join('?' * len(exclude))})"
            values.extend(s.value for s in exclude)
        for r in self._stream(sql + " ORDER BY seq", values):
            yield NodeRow(run_id=run_id, node_key=NodeKey(r[0]), node_id=r[1],
                              scope_path=r[2], type=r[3], status=NodeStatus(r[4]), seq=r[5],
                              record={} if r[6] is None else json.loads(r[6]))

    def usage_facts(self, run_id: RunId) -> Iterator[NodeFacts | AttemptFacts]:
        """What a run's usage is summed from: its node rows grouped and summed by the
        database over the figures in their columns (:class:`NodeFacts`), and the attempts
        of the few rows whose records are read (a driver's attempt, or a row written
        without the columns), grouped (:class:`AttemptFacts`). A handful of values
        whatever the run's size, and no record parsed but those few."""
        for r in self._x(_SUMMED, (run_id,)).fetchall():
            facts, sums = r[2], r[6:]
            if facts is None or facts & DRIVEN:
                continue  # read from their records, below
            yield NodeFacts(
                type=r[0], status=NodeStatus(r[1]), started=bool(facts & STARTED),
                count=int(r[3]), attempts=int(r[4]), rerun=int(r[5]),
                usage=None if not facts & USAGE else {
                    k: None if k in MEASURED and facts >> (UNKNOWN + MEASURED.index(k)) & 1
                    else as_given(sums[i], facts, i) for i, k in enumerate(SUMMED)})
        rows = (NodeRow(run_id=run_id, node_key=NodeKey(r[0]), node_id=r[1],
                        scope_path=r[2], type=r[3], status=NodeStatus(r[4]), seq=r[5],
                        record=json.loads(r[6]))
                for r in self._stream(_READ_WHOLE, (run_id,)))
        yield from grouped(f for row in rows for f in facts_of(row))

    def node(self, run_id: RunId, node_key: str) -> NodeRow | None:
        r = self._x("SELECT node_key, node_id, scope_path, type, status, seq, record"
                    " FROM nodes WHERE run_id = ? AND node_key = ?", (run_id, node_key)
                    ).fetchone()
        return None if r is None else NodeRow(
            run_id=run_id, node_key=NodeKey(r[0]), node_id=r[1], scope_path=r[2], type=r[3],
            status=NodeStatus(r[4]), seq=r[5], record=json.loads(r[6]))
