"""Process groups started for a run, until they are gone
(:class:`rein.store.base.Processes`).
"""

from __future__ import annotations

from rein.core.ids import RunId
from rein.store.rows import ProcessRow
from rein.store.sql.connection import SQLConnection


class ProcessesSQL(SQLConnection):
    """Process groups started for a run, until they are gone."""

    # -- process groups -------------------------------------------------------------------

    def record_process(self, row: ProcessRow) -> None:
        """Remember a process group started for a run (before it can outlive us)."""
        with self._tx():
            self._x("INSERT INTO processes (run_id, pgid, ident, host, owner_pid, node_key,"
                    " started_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, pgid)"
                    " DO UPDATE SET ident = excluded.ident, owner_pid = excluded.owner_pid,"
                    " node_key = excluded.node_key, started_at = excluded.started_at",
                    (row.run_id, row.pgid, row.ident, row.host, row.owner_pid, row.node_key,
                     row.started_at))

    def forget_process(self, run_id: str, pgid: int) -> None:
        """The group is gone: drop its row."""
        with self._tx():
            self._x("DELETE FROM processes WHERE run_id = ? AND pgid = ?", (run_id, pgid))

    def processes(self, run_id: str) -> list[ProcessRow]:
        """Process groups recorded for a run and not yet known to be gone."""
        rows = self._x("SELECT run_id, pgid, ident, host, owner_pid, node_key, started_at"
                       " FROM processes WHERE run_id = ? ORDER BY started_at, pgid",
                       (run_id,)).fetchall()
        return [ProcessRow(run_id=RunId(r[0]), pgid=int(r[1]), ident=r[2], host=r[3],
                           owner_pid=int(r[4]), node_key=r[5], started_at=r[6]) for r in rows]
