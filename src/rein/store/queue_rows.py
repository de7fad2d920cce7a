"""The scale-out rows of runs being removed from a PostgreSQL store.

A run that used the DBOS executor leaves rows outside rein's run tables: one DBOS workflow
per attempt, per continued turn and per remote command criterion (``dbos.workflow_status``
and the tables that hang off it), and one row per attempt in ``rein_attempt_runs``. All of
them have ids that begin with ``<run id>/``. :func:`delete_queue_rows` removes them with the
run, in the run's removal transaction, so ``rein runs prune`` leaves nothing of a removed
run behind. A workflow still ``PENDING`` (a worker is running it right now) stays: removing
its row under the worker would turn its answer into an error; the next prune takes it.

No DBOS import: the rows are plain tables, and a store that never saw a worker has none
(every statement is skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# DBOS's tables keyed by workflow id. workflow_input, workflow_output and operation_outputs
# carry no foreign key (they would outlive the status row); the others cascade from it.
_PAYLOAD_TABLES = ("workflow_input", "workflow_output", "operation_outputs")


def delete_queue_rows(execute: Callable[..., Any], run_ids: Sequence[str]) -> dict[str, int]:
    """Remove the DBOS workflows and attempt-run rows of ``run_ids`` (not the ones a worker
    is running); the number removed of each kind. ``execute`` runs one statement with
    ``?`` placeholders, inside the caller's transaction."""
    found = execute("SELECT to_regclass('dbos.workflow_status') IS NOT NULL, "
                    "to_regclass('rein_attempt_runs') IS NOT NULL").fetchone()
    removed = {"workflows": 0, "attempt_runs": 0}
    if not run_ids or not (found[0] or found[1]):
        return removed
    prefixes = [f"{run_id}/" for run_id in dict.fromkeys(run_ids)]
    if found[0]:
        ids = [str(r[0]) for r in execute(
            "SELECT workflow_uuid FROM dbos.workflow_status WHERE status <> 'PENDING' "
            "AND workflow_uuid ^@ ANY(?)", (prefixes,)).fetchall()]
        if ids:
            for table in _PAYLOAD_TABLES:
                execute(f"DELETE FROM dbos.{table} WHERE workflow_uuid = ANY(?)", (ids,))
            removed["workflows"] = int(execute(
                "DELETE FROM dbos.workflow_status WHERE workflow_uuid = ANY(?)",
                (ids,)).rowcount)
    if found[1]:
        # An attempt a worker is running keeps its re-run count (the next run reads it).
        running = ("AND workflow_id NOT IN (SELECT workflow_uuid FROM dbos.workflow_status "
                   "WHERE status = 'PENDING')") if found[0] else ""
        removed["attempt_runs"] = int(execute(
            "DELETE FROM rein_attempt_runs WHERE workflow_id ^@ ANY(?) "
            f"{running}", (prefixes,)).rowcount)
    return removed


__all__ = ["delete_queue_rows"]
