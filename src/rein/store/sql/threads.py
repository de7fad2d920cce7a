"""The session runtime's threads and their turns (:class:`rein.store.base.Threads`).
"""

from __future__ import annotations

import json

from rein.store.rows import ThreadRow, ThreadTurnRow
from rein.store.sql.connection import SQLConnection, dump

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any


class ThreadsSQL(SQLConnection):
    """The session runtime's threads and their turns."""

    # -- threads of the session runtime ----------------------------------------------------

    def save_thread(self, row: ThreadRow) -> None:
        with self._tx():
            self._x("INSERT INTO threads (thread_id, data, archived, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET"
                    " data = excluded.data, archived = excluded.archived,"
                    " updated_at = excluded.updated_at",
                    (row.thread_id, dump(self.redact(dict(row.data))), int(row.archived),
                     row.created_at, row.updated_at))

    def get_thread(self, thread_id: str) -> ThreadRow | None:
        r = self._x("SELECT thread_id, data, archived, created_at, updated_at FROM threads"
                    " WHERE thread_id = ?", (thread_id,)).fetchone()
        return None if r is None else self._thread(r)

    def list_threads(self) -> list[ThreadRow]:
        rows = self._x("SELECT thread_id, data, archived, created_at, updated_at FROM threads"
                       " ORDER BY created_at, thread_id").fetchall()
        return [self._thread(r) for r in rows]

    @staticmethod
    def _thread(r: tuple[Any, ...]) -> ThreadRow:
        return ThreadRow(thread_id=r[0], data=json.loads(r[1]), archived=bool(r[2]),
                         created_at=r[3], updated_at=r[4])

    def add_thread_turn(self, row: ThreadTurnRow) -> None:
        with self._tx():
            self._x("INSERT INTO thread_turns (thread_id, seq, turn_id, run_id, input,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (row.thread_id, row.seq, row.turn_id, row.run_id,
                     dump(self.redact(dict(row.input))), row.created_at))

    def set_turn_run(self, turn_id: str, run_id: str) -> None:
        with self._tx():
            self._x("UPDATE thread_turns SET run_id = ? WHERE turn_id = ?", (run_id, turn_id))

    def thread_turns(self, thread_id: str) -> list[ThreadTurnRow]:
        rows = self._x("SELECT thread_id, seq, turn_id, run_id, input, created_at"
                       " FROM thread_turns WHERE thread_id = ? ORDER BY seq",
                       (thread_id,)).fetchall()
        return [ThreadTurnRow(thread_id=r[0], seq=int(r[1]), turn_id=r[2], run_id=r[3],
                              input=json.loads(r[4]), created_at=r[5]) for r in rows]
