"""Which of the workflows a coordinator waits on have ended: one lean statement.

The coordinator learns from ``rein_done`` that attempts ended and then reads their rows.
DBOS's ``list_workflows`` does that with a select of some thirty columns built anew by
SQLAlchemy at each call and a status object per row: about 1.5 ms of the coordinator's CPU
a call, where the statement itself costs the database a fraction of that. The coordinator
needs four things of each row (id, status, output, error), so :class:`EndedReader` asks
for just those, on its own connection, and decodes the output and the error with DBOS's
own deserializer and the client's serializer (JSON only, :mod:`.serialization`), as
``list_workflows`` does.

It reads DBOS's tables (``dbos.workflow_status`` and ``dbos.workflow_output``, as the dbos
versions the scale extra pins lay them out). :meth:`EndedReader.open` tries the statement
once: on tables of another shape it answers ``None`` and the coordinator keeps using
``list_workflows``; a read that fails later (a lost connection) is made by
``list_workflows`` too, and the next one on a fresh connection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

QUERY = """SELECT s.workflow_uuid, s.status, COALESCE(o.output, s.output),
       COALESCE(o.error, s.error), s.serialization
FROM dbos.workflow_status s
LEFT JOIN dbos.workflow_output o ON o.workflow_uuid = s.workflow_uuid
WHERE s.workflow_uuid = ANY(%s::text[]) AND s.status = ANY(%s::text[])"""


class Ended(NamedTuple):
    """A workflow that ended, as the coordinator uses it."""

    workflow_id: str
    status: str
    output: Any  # decoded
    error: Any  # decoded (an exception), or None


class EndedReader:
    """Reads ended workflows in one statement; ``fallback`` (``list_workflows``) otherwise."""

    def __init__(self, url: str, serializer: Any,
                 fallback: Callable[[list[str], list[str]], list[Ended]]) -> None:
        self.url, self.serializer, self.fallback = url, serializer, fallback
        self._conn: Any = None
        self.lean = 0  # reads answered by the lean statement (tests count them)

    @classmethod
    def open(cls, url: str, serializer: Any,
             fallback: Callable[[list[str], list[str]], list[Ended]]) -> EndedReader | None:
        """A reader whose statement ran once against these tables, or ``None``."""
        import psycopg

        reader = cls(url, serializer, fallback)
        try:
            reader._connection().execute(QUERY, ([], [])).fetchall()
        except psycopg.Error:
            reader.close()
            return None
        return reader

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10,
                                         application_name="rein-coordinator")
        return self._conn

    def read(self, ids: Sequence[str], states: Sequence[str]) -> list[Ended]:
        """The workflows of ``ids`` whose status is one of ``states``."""
        import psycopg
        from dbos._serialization import safe_deserialize

        try:
            rows = self._connection().execute(QUERY, (list(ids), list(states))).fetchall()
        except psycopg.Error:
            self.close()  # a fresh connection next time; this read as DBOS makes it
            return self.fallback(list(ids), list(states))
        self.lean += 1
        out = []
        for workflow_id, status, output, error, serialization in rows:
            _, value, exc = safe_deserialize(
                self.serializer, serialization, workflow_id, serialized_input=None,
                serialized_output=output, serialized_exception=error)
            out.append(Ended(str(workflow_id), str(status), value, exc))
        return out

    def close(self) -> None:
        if self._conn is not None and not self._conn.closed:
            self._conn.close()
        self._conn = None


def listed(list_workflows: Callable[..., Any]) -> Callable[[list[str], list[str]], list[Ended]]:
    """The same read through DBOS's ``list_workflows`` (a client's)."""

    def read(ids: list[str], states: list[str]) -> list[Ended]:
        rows = list_workflows(workflow_ids=ids, status=states, load_input=False)
        return [Ended(r.workflow_id, r.status, r.output, r.error) for r in rows]

    return read


__all__ = ["QUERY", "Ended", "EndedReader", "listed"]
