"""The figures of a node row's attempts that a run's usage totals read, kept in columns of
the row (schema version 7): written with the row, in the same statement, so that the totals
are a ``GROUP BY`` over plain columns and no record is parsed to sum them.

:func:`figures_of` says what the columns hold for one record, from the same fields
:func:`rein.store.sql.runs.facts_of` reads out of the record; :data:`COLUMNS` names them in
that order. The yes-or-no facts are bits of one column (``facts``), so that a run's rows
are grouped by (type, status, facts) in the order of the index ``nodes_facts``, with no
sort. A row whose ``facts`` is NULL was written without them (by a rein older than version
7 after the store was upgraded): the totals read its record instead, as they read the
record of a row with a driver's attempt (:data:`DRIVEN`), whose usage rein may replace by
what it attributed to the turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from rein.store.rows import MEASURED, SUMMED

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Runner = Callable[[str, tuple[Any, ...] | list[Any]], Any]  # a store's statement runner (``_x``)
    Step = str | Callable[[Runner], None]  # of a migration: a statement, or a step of code

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
)

# The bits of ``facts``.
STARTED = 1  # the record has a ``started_at``
USAGE = 2  # an attempt's ``usage`` is an object
DRIVEN = 4  # an attempt was a driver's (it carries a driver token)
UNKNOWN = 3  # bit UNKNOWN + i: figure MEASURED[i] is not a number in such a usage
FLOATS = UNKNOWN + len(MEASURED)  # bit FLOATS + i: figure SUMMED[i] is a float somewhere

# The rows whose records the totals read (the partial index ``nodes_by_record``).
READ_WHOLE = f"(facts IS NULL OR (facts & {DRIVEN}) <> 0)"


def figures_of(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """The values of :data:`COLUMNS` for a node row's ``record``."""
    attempts = record.get("attempts")
    if not isinstance(attempts, list):
        attempts = []
    rerun = 0
    facts = STARTED if record.get("started_at") else 0
    sums: list[Any] = [0] * len(SUMMED)
    for a in attempts:
        if not isinstance(a, Mapping):
            rerun += 1  # no status: the same as one still open
            continue
        status = a.get("status")
        if status is None or status == "succeeded":
            rerun += 1
        if a.get(DRIVER_TOKEN) is not None:
            facts |= DRIVEN
        used = a.get("usage")
        if not isinstance(used, Mapping):
            continue
        facts |= USAGE
        for i, k in enumerate(SUMMED):
            v = used.get(k)
            if isinstance(v, int | float) and not isinstance(v, bool):
                sums[i] += v
                if isinstance(v, float):
                    facts |= 1 << (FLOATS + i)
            elif k in MEASURED:
                facts |= 1 << (UNKNOWN + MEASURED.index(k))
    return (len(attempts), rerun, facts, *(float(s) for s in sums))


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


def fill_node_figures(x: Runner) -> None:
    """Fill the columns of the rows stored before schema version 7 from their records, a
    page of rows at a time (in the migration's transaction). A record that is not a JSON
    object is left as it is: the totals read it, as they always did."""
    marks = ", ".join(["?"] * (2 + len(COLUMNS)))
    names = ", ".join(COLUMNS)
    sets = ", ".join(f"{c} = v.{c}" for c in COLUMNS)
    after: tuple[str, str] | None = None
    while True:
        page = x("SELECT run_id, node_key, record FROM nodes WHERE facts IS NULL"
                 + ("" if after is None else
                    " AND (run_id > ? OR (run_id = ? AND node_key > ?))")
                 + f" ORDER BY run_id, node_key LIMIT {FILL_PAGE}",
                 () if after is None else (after[0], after[0], after[1])).fetchall()
        if not page:
            return
        after = (page[-1][0], page[-1][1])
        values: list[Any] = []
        for run_id, node_key, text in page:
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if isinstance(record, Mapping):
                values.append((run_id, node_key, *figures_of(record)))
        for start in range(0, len(values), 100):  # below every backend's parameter limit
            part = values[start:start + 100]
            x(f"WITH v (run_id, node_key, {names}) AS (VALUES "
              + ", ".join([f"({marks})"] * len(part))
              + f") UPDATE nodes SET {sets} FROM v"
              " WHERE nodes.run_id = v.run_id AND nodes.node_key = v.node_key",
              [value for row in part for value in row])
