"""Runs and their node rows, read, and the removal of whole runs
(:class:`rein.store.base.Runs`).

A run is created with its ``run/started`` event, and changed with the event that describes
the change, by the event log (:class:`rein.store.sql.events.EventsSQL`). The run lock every
backend holds its own way is the connection's
(:meth:`rein.store.sql.connection.SQLConnection.lock_run`).

The figures of a node row's attempts that a run's usage totals read are kept in columns of
the row (schema version 7): written with the row, in the same statement, so that the
totals are a ``GROUP BY`` over plain columns and no record is parsed to sum them.
:func:`figures_of` says what the columns hold for one record, from the same fields
:func:`facts_of` reads out of the record; :data:`COLUMNS` names them in that order. The
yes-or-no facts are bits of one column (``facts``), so that a run's rows are grouped by
(type, status, facts) in the order of the index ``nodes_facts``, with no sort. A row whose
``facts`` is NULL was written without them (by a rein older than version 7 after the store
was upgraded), and a row whose status is not the one the columns were written with
(``figured_status``: such a rein changed it since): the totals read its record instead, as
they read the record of a row with a driver's attempt (:data:`DRIVEN`), whose usage rein
may replace by what it attributed to the turn.
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

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Runner = Callable[[str, tuple[Any, ...] | list[Any]], Any]  # a store's statement runner
    Step = str | Callable[[Runner], None]  # of a migration: a statement, or a step of code


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


# Fields of an attempt's record the usage totals read (written by the engine).
DRIVER_TOKEN = "x-rein-driver-token"  # a driver's attempt: the turn that served it
USAGE_SOURCE = "x-rein-usage-source"  # a driver's attempt whose usage the agent reported

# One column per figure of SUMMED, summed over the node's attempts: a float column, the
# figure's type kept apart (FLOATS), so that 3 stays 3 and 3.0 stays 3.0.
FIGURE_COLUMNS = tuple(f"usage_{k}" for k in SUMMED)

COLUMNS = (
    "attempts",  # how many attempts
    "attempts_rerun",  # attempts whose status is none or succeeded (see usage_of)
    "facts",  # the bits below; NULL: not filled, the record is read instead
    *FIGURE_COLUMNS,
    # The node's status when these were written with the record: a rein older than schema
    # version 7 still running when the store was upgraded changes a row's status and
    # record, not these, and a status that differs has the record read instead.
    "figured_status",
)

# The bits of ``facts``.
STARTED = 1  # the record has a ``started_at``
USAGE = 2  # an attempt's ``usage`` is an object
DRIVEN = 4  # an attempt was a driver's (it carries a driver token)
UNKNOWN = 3  # bit UNKNOWN + i: figure MEASURED[i] is not a number in such a usage
FLOATS = UNKNOWN + len(MEASURED)  # bit FLOATS + i: figure SUMMED[i] is a float somewhere

# The rows whose records the totals read (the partial index ``nodes_by_record``); the
# others are summed from their columns (FIGURED).
READ_WHOLE = f"(facts IS NULL OR (facts & {DRIVEN}) <> 0 OR figured_status <> status)"
FIGURED = f"(facts & {DRIVEN}) = 0 AND figured_status = status"


def figures_of(record: Mapping[str, Any], status: str) -> tuple[Any, ...]:
    """The values of :data:`COLUMNS` for a node row's ``record`` and ``status``: the
    figures NULL when no attempt has a ``usage`` object (there is nothing to sum). Every
    write of a node row computes them: the common shapes take the short ways."""
    facts = STARTED if record.get("started_at") else 0
    attempts = record.get("attempts")
    if not attempts or not isinstance(attempts, list):  # most writes: a node not tried yet
        return (0, 0, facts, *_NO_FIGURES, status)
    rerun = 0
    sums: list[Any] = [0] * len(SUMMED)
    for a in attempts:
        if type(a) is not dict and not isinstance(a, Mapping):
            rerun += 1  # no status: the same as one still open
            continue
        ended = a.get("status")
        if ended is None or ended == "succeeded":
            rerun += 1
        if a.get(DRIVER_TOKEN) is not None:
            facts |= DRIVEN
        used = a.get("usage")
        if type(used) is not dict and not isinstance(used, Mapping):
            continue
        facts |= USAGE
        for i, k, unknown in _FIGURES:
            v = used.get(k)
            kind = type(v)
            if kind is int or kind is float or (
                    isinstance(v, (int, float)) and not isinstance(v, bool)):
                sums[i] += v
                if isinstance(v, float):
                    facts |= 1 << (FLOATS + i)
            else:
                facts |= unknown
    if not facts & USAGE:
        return (len(attempts), rerun, facts, *_NO_FIGURES, status)
    return (len(attempts), rerun, facts, *[float(s) for s in sums], status)


# (i, SUMMED[i], the bit of facts that says it is unknown: 0 where a worker need not
# measure it)
_FIGURES = tuple((i, k, 1 << (UNKNOWN + MEASURED.index(k)) if k in MEASURED else 0)
                 for i, k in enumerate(SUMMED))
_NO_FIGURES = (None,) * len(SUMMED)


def as_given(total: Any, facts: int, i: int) -> Any:
    """A summed figure column (:data:`SUMMED` ``[i]``) as the records gave it: an integer
    unless one of its values was a float."""
    if total is None:
        return 0
    return float(total) if facts >> (FLOATS + i) & 1 else int(total)


def run_step(step: Step, x: Runner) -> None:
    """One step of a migration: a statement, or code given the statement runner."""
    if isinstance(step, str):
        x(step, ())
    else:
        step(x)


FILL_PAGE = 500  # rows read at a time when filling the columns of rows stored before
_TYPES = {**{c: "DOUBLE PRECISION" for c in FIGURE_COLUMNS}, "figured_status": "TEXT"}


def fill_node_figures(x: Runner) -> None:
    """Fill the columns of the rows stored before schema version 7 from their records, a
    page of rows at a time (in the migration's transaction). A record that is not a JSON
    object is left as it is: the totals read it, as they always did."""
    marks = ", ".join(["?"] * (2 + len(COLUMNS)))
    names = ", ".join(COLUMNS)
    # Typed: a parameter that is NULL in every row of a VALUES list is text to PostgreSQL.
    sets = ", ".join(f"{c} = CAST(v.{c} AS {_TYPES.get(c, 'INTEGER')})" for c in COLUMNS)
    after: tuple[str, str] | None = None
    while True:
        page = x("SELECT run_id, node_key, record, status FROM nodes WHERE facts IS NULL"
                 + ("" if after is None else
                    " AND (run_id > ? OR (run_id = ? AND node_key > ?))")
                 + f" ORDER BY run_id, node_key LIMIT {FILL_PAGE}",
                 () if after is None else (after[0], after[0], after[1])).fetchall()
        if not page:
            return
        after = (page[-1][0], page[-1][1])
        values: list[Any] = []
        for run_id, node_key, text, status in page:
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if isinstance(record, Mapping):
                values.append((run_id, node_key, *figures_of(record, status)))
        for start in range(0, len(values), 100):  # below every backend's parameter limit
            part = values[start:start + 100]
            x(f"WITH v (run_id, node_key, {names}) AS (VALUES "
              + ", ".join([f"({marks})"] * len(part))
              + f") UPDATE nodes SET {sets} FROM v"
              " WHERE nodes.run_id = v.run_id AND nodes.node_key = v.node_key",
              [value for row in part for value in row])


# A run's rows grouped by what their columns say, in the order of the index nodes_facts (no
# sort), their figures summed: a handful of rows back, no record read.
_SUMMED = ("SELECT type, status, facts, COUNT(*), SUM(attempts), SUM(attempts_rerun), "
           + ", ".join(f"SUM({c})" for c in FIGURE_COLUMNS)
           + f" FROM nodes WHERE run_id = ? AND {FIGURED} GROUP BY type, status, facts")
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
