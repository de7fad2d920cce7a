"""Who is alive: each ``rein worker`` beats in the store; a dead one's attempts are resumed.

DBOS gives a workflow back to the queue only when a process restarts under the dead one's
executor id or someone calls ``resume_workflow``. rein supplies that supervision: every
worker writes a heartbeat row every :data:`BEAT_SECONDS`; any live worker or coordinator
that finds a row older than :data:`STALE_SECONDS` deletes it (one process wins the delete)
and resumes the PENDING attempt workflows recorded under that executor. Times are the
server's (``now()``), so machines need no synchronised clocks.

The tables are rein's own, created idempotently (``IF NOT EXISTS``) beside the store's tables.
``rein_executors`` holds no run data, so a lost row costs at most one supervision round.
``rein_attempt_runs`` counts how often each attempt workflow began to run and where: the
first run is not a re-run, any later one is (a worker died mid-attempt). One statement per
attempt, where a checkpointed DBOS step would cost two transactions.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

BEAT_SECONDS = 1.0
STALE_SECONDS = 5.0

SCHEMA = """CREATE TABLE IF NOT EXISTS rein_executors (
    executor_id TEXT PRIMARY KEY,
    queues TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    beat_at TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS rein_attempt_runs (
    workflow_id TEXT PRIMARY KEY,
    executor_id TEXT NOT NULL,
    runs INTEGER NOT NULL DEFAULT 1,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now())"""


_SCHEMA_LOCK = 0x7265696E  # one creator at a time: IF NOT EXISTS alone races

# Wake-ups instead of polling: a trigger on DBOS's workflow table (its columns
# ``workflow_uuid``, ``name``, ``status``, ``queue_name``, stable across DBOS 3.x) notifies
# ``rein_enqueued`` with the queue's name when an attempt or check is enqueued (or
# resumed), and ``rein_done`` with the workflow id when one ends. A notification is sent
# when the change commits, so whoever it wakes reads the committed row. Polling stays, rarer,
# as the fallback: a notification is a hint, never the record.
ENQUEUED_CHANNEL = "rein_enqueued"
DONE_CHANNEL = "rein_done"
NOTIFY_SCHEMA = """CREATE OR REPLACE FUNCTION rein_workflow_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.name IN ('rein_attempt', 'rein_check') THEN
        IF NEW.status = 'ENQUEUED' THEN
            PERFORM pg_notify('rein_enqueued', COALESCE(NEW.queue_name, ''));
        ELSIF NEW.status IN ('SUCCESS', 'ERROR', 'CANCELLED',
                             'MAX_RECOVERY_ATTEMPTS_EXCEEDED') THEN
            PERFORM pg_notify('rein_done', NEW.workflow_uuid);
        END IF;
    END IF;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER rein_workflow_notify
    AFTER INSERT OR UPDATE OF status ON dbos.workflow_status
    FOR EACH ROW EXECUTE FUNCTION rein_workflow_notify()"""


def install_notify(conn: Any) -> None:
    """Put the wake-up trigger in place (once DBOS's tables exist: a worker has launched)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        conn.execute(NOTIFY_SCHEMA)


def connect(url: str) -> Any:
    """A connection to the store with the heartbeat table in place."""
    import psycopg

    from rein.errors import ReinError
    from rein.store.postgres import redact_url

    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            conn.execute(SCHEMA)
    except psycopg.Error as exc:
        raise ReinError(f"cannot reach the store {redact_url(url)}: {str(exc).strip()}",
                        code="SCALE003", hint="check the --store URL and that the server "
                        "is up") from exc
    return conn


def beat(conn: Any, executor_id: str, queues: list[str]) -> None:
    """Say this executor is alive (insert or refresh its row)."""
    conn.execute(
        "INSERT INTO rein_executors (executor_id, queues, host, pid) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (executor_id) DO UPDATE SET beat_at = now(), queues = EXCLUDED.queues",
        (executor_id, ",".join(queues), socket.gethostname(), os.getpid()))


def leave(conn: Any, executor_id: str) -> None:
    """A worker that stops cleanly leaves nothing to resume."""
    conn.execute("DELETE FROM rein_executors WHERE executor_id = %s", (executor_id,))


def claim_dead(conn: Any, stale_seconds: float = STALE_SECONDS) -> list[str]:
    """Executors whose heartbeat stopped, each claimed by exactly one caller."""
    rows = conn.execute(
        "DELETE FROM rein_executors WHERE beat_at < now() - make_interval(secs => %s) "
        "RETURNING executor_id", (stale_seconds,)).fetchall()
    return [str(r[0]) for r in rows]


def mark_run(conn: Any, workflow_id: str, executor_id: str) -> bool:
    """Record that ``executor_id`` begins to run the attempt workflow; whether it is a
    re-run (someone began it before)."""
    row = conn.execute(
        "INSERT INTO rein_attempt_runs (workflow_id, executor_id) VALUES (%s, %s) "
        "ON CONFLICT (workflow_id) DO UPDATE SET runs = rein_attempt_runs.runs + 1, "
        "executor_id = EXCLUDED.executor_id, started_at = now() RETURNING runs",
        (workflow_id, executor_id)).fetchone()
    return int(row[0]) > 1


def live(conn: Any) -> list[dict[str, Any]]:
    """The executors with a row, freshest first (``rein worker --list``, tests)."""
    rows = conn.execute("SELECT executor_id, queues, host, pid, "
                        "extract(epoch FROM now() - beat_at) FROM rein_executors "
                        "ORDER BY beat_at DESC").fetchall()
    return [{"executor_id": r[0], "queues": r[1].split(","), "host": r[2], "pid": r[3],
             "seconds_since_beat": float(r[4])} for r in rows]


def left_by(executor_id: str, list_workflows: Callable[..., Any], names: list[str]
            ) -> list[tuple[str, str | None]]:
    """What a dead executor leaves to resume, each with the queue to resume it on: its
    PENDING workflows on the queue they came from, and the command criteria still waiting
    on its own queue (``<tree queue>#<executor>``) on that tree's queue, for any worker
    with the tree."""
    rows = list_workflows(executor_id=executor_id, status="PENDING", name=names,
                          load_input=False, load_output=False)
    left = [(r.workflow_id, r.queue_name) for r in rows]
    own = f"#{executor_id}"
    waiting = list_workflows(status="ENQUEUED", name=names, load_input=False,
                             load_output=False)
    left += [(r.workflow_id, str(r.queue_name)[:-len(own)]) for r in waiting
             if str(r.queue_name or "").endswith(own)]
    return left


def supervise(conn: Any, pending_of: Callable[[str], list[tuple[str, str | None]]],
              resume: Callable[[str, str | None], Any]) -> list[str]:
    """Resume the PENDING workflows of every executor found dead, each on the queue it was
    taken from (its tree's, so no worker with another tree gets it); their ids."""
    resumed: list[str] = []
    for executor_id in claim_dead(conn):
        for workflow_id, queue in pending_of(executor_id):
            resume(workflow_id, queue)
            resumed.append(workflow_id)
    return resumed


class Listener:
    """A thread that LISTENs on ``channel`` and calls ``heard`` with each payload.

    Its own connection, autocommit; a lost connection is opened again after a pause, and
    ``heard(None)`` says notifications may have been missed meanwhile (the caller looks).
    """

    def __init__(self, url: str, channel: str, heard: Callable[[str | None], None]) -> None:
        import threading

        self.url, self.channel, self.heard = url, channel, heard
        self.stop = threading.Event()
        self.conn: Any = None
        self.thread = threading.Thread(target=self._run, name=f"rein-listen-{channel}",
                                       daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import psycopg

        while not self.stop.is_set():
            try:
                self.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
                self.conn.execute(f"LISTEN {self.channel}")
                self.heard(None)
                while not self.stop.is_set():
                    for note in self.conn.notifies(timeout=0.5):
                        self.heard(note.payload)
            except psycopg.Error:
                if self.stop.wait(1.0):
                    return
            finally:
                if self.conn is not None and not self.conn.closed:
                    self.conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


__all__ = ["BEAT_SECONDS", "DONE_CHANNEL", "ENQUEUED_CHANNEL", "STALE_SECONDS", "Listener",
           "beat", "claim_dead", "connect", "install_notify", "leave", "left_by", "live",
           "mark_run", "supervise"]
