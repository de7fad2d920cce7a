"""The embedded store: SQLite in WAL mode at ``<workspace>/.rein/rein.db``.

The schema is versioned (table ``schema_version``) and upgraded by the migrations below,
applied in order inside one transaction each; a database written by a newer rein is refused
rather than guessed at. SQL stays plain (no JSON functions, no UPSERT extensions beyond
``ON CONFLICT``) so that the PostgreSQL backend can share it.

Transactions are short: one event row plus the one node or run row it changes. Nothing is
rewritten wholesale on a transition, which keeps per-node overhead well under a millisecond.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rein.errors import Refused, StoreError
from rein.store.base import ApprovalRow, Event, NodeRow, RunRow, Transition
from rein.store.ids import ApprovalId, NodeKey, RunId
from rein.store.state import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus

STATE_DIR = ".rein"
DB_NAME = "rein.db"

# Each entry upgrades the schema from version i to i + 1. Never edit a released entry:
# append a new one, and keep a fixture database of every version in tests/store/fixtures.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            parent_run_id TEXT,
            parent_node_key TEXT,
            graph_id TEXT NOT NULL,
            graph_path TEXT NOT NULL,
            graph_digest TEXT NOT NULL,
            status TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            binding TEXT NOT NULL,
            summary TEXT NOT NULL,
            created INTEGER NOT NULL
        )""",
        "CREATE INDEX runs_parent ON runs (parent_run_id)",
        """CREATE TABLE events (
            run_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            payload TEXT NOT NULL,
            at TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        )""",
        """CREATE TABLE nodes (
            run_id TEXT NOT NULL,
            node_key TEXT NOT NULL,
            node_id TEXT NOT NULL,
            scope_path TEXT NOT NULL,
            type TEXT NOT NULL,
            status TEXT NOT NULL,
            seq INTEGER NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (run_id, node_key)
        )""",
        """CREATE TABLE approvals (
            approval_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            digest TEXT NOT NULL,
            request TEXT NOT NULL,
            answer TEXT,
            created_at TEXT NOT NULL,
            answered_at TEXT,
            UNIQUE (run_id, key)
        )""",
    ),
    (
        # The driver worker's instructions (rein.workers.driver_store): one row per attempt
        # handed to an external agent, answered at most once.
        """CREATE TABLE driver_turns (
            token TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            root_run_id TEXT NOT NULL,
            node_key TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            instruction TEXT NOT NULL,
            baseline TEXT NOT NULL,
            answer TEXT,
            created_at TEXT NOT NULL,
            answered_at TEXT
        )""",
        "CREATE INDEX driver_turns_root ON driver_turns (root_run_id, status)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def db_path(workspace: str | Path) -> Path:
    """Where the embedded store of ``workspace`` lives."""
    return Path(workspace) / STATE_DIR / DB_NAME


class SQLiteStore:
    """The SQLite implementation of :class:`rein.store.base.Store`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._db = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the run store {self.path}: {exc}",
                hint="check that the workspace is writable",
            ) from exc
        self._db.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a power loss may lose the last commits, a process crash loses none.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    @classmethod
    def open(cls, workspace: str | Path, *, create: bool = True) -> SQLiteStore | None:
        """The store of ``workspace``; ``None`` when it does not exist and ``create`` is false."""
        path = db_path(workspace)
        if not path.exists():
            if not create:
                return None
            path.parent.mkdir(parents=True, exist_ok=True)
        return cls(path)

    # -- schema --------------------------------------------------------------------------

    def schema_version(self) -> int:
        row = self._db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name='schema_version'"
        ).fetchone()
        if row is None:
            return 0
        got = self._db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(got[0] or 0)

    def _migrate(self) -> None:
        with self._tx():
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, "
                "applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )
            current = self.schema_version()
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"the run store {self.path} has schema version {current}, newer than "
                    f"this rein understands ({SCHEMA_VERSION})",
                    hint="upgrade rein, or use a different workspace",
                )
            for version in range(current, SCHEMA_VERSION):
                for statement in MIGRATIONS[version]:
                    self._db.execute(statement)
                self._db.execute("INSERT INTO schema_version (version) VALUES (?)", (version + 1,))

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"the run store is busy: {exc}", hint="retry in a moment") from exc
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        else:
            self._db.execute("COMMIT")

    # -- writes --------------------------------------------------------------------------

    def create_run(self, run: RunRow, *, event_type: str, payload: Mapping[str, Any]) -> Event:
        with self._tx():
            created = self._db.execute("SELECT COALESCE(MAX(created), 0) + 1 FROM runs")
            self._db.execute(
                "INSERT INTO runs (run_id, parent_run_id, parent_node_key, graph_id, graph_path,"
                " graph_digest, status, started_at, finished_at, binding, summary, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.run_id,
                    run.parent_run_id,
                    run.parent_node_key,
                    run.graph_id,
                    run.graph_path,
                    run.graph_digest,
                    run.status.value,
                    run.started_at,
                    run.finished_at,
                    _dump(dict(run.binding)),
                    _dump(dict(run.summary)),
                    created.fetchone()[0],
                ),
            )
            return self._append(run.run_id, event_type, payload, run.started_at)

    def transition(
        self,
        run_id: RunId,
        event_type: str,
        payload: Mapping[str, Any],
        at: str,
        change: Transition | None = None,
    ) -> Event:
        with self._tx():
            event = self._append(run_id, event_type, payload, at)
            if change is not None:
                self._apply(run_id, change)
            return event

    def _append(self, run_id: str, event_type: str, payload: Mapping[str, Any], at: str) -> Event:
        # Read inside the transaction: another process (an approval answer) may have appended.
        row = self._db.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?", (run_id,)
        ).fetchone()
        seq = int(row[0]) + 1
        self._db.execute(
            "INSERT INTO events (run_id, seq, type, payload, at) VALUES (?, ?, ?, ?, ?)",
            (run_id, seq, event_type, _dump(dict(payload)), at),
        )
        return Event(run_id=RunId(run_id), seq=seq, type=event_type, payload=payload, at=at)

    def _apply(self, run_id: str, change: Transition) -> None:
        if change.node is not None:
            n = change.node
            self._db.execute(
                "INSERT INTO nodes (run_id, node_key, node_id, scope_path, type, status, seq,"
                " record) VALUES (?, ?, ?, ?, ?, ?,"
                " (SELECT COALESCE(MAX(seq), 0) + 1 FROM nodes WHERE run_id = ?), ?)"
                " ON CONFLICT (run_id, node_key) DO UPDATE SET status = excluded.status,"
                " record = excluded.record",
                (
                    run_id,
                    n.node_key,
                    n.node_id,
                    n.scope_path,
                    n.type,
                    n.status.value,
                    run_id,
                    _dump(dict(n.record)),
                ),
            )
        sets: list[str] = []
        values: list[Any] = []
        if change.run_status is not None:
            sets.append("status = ?")
            values.append(change.run_status.value)
        if change.finished_at is not None:
            sets.append("finished_at = ?")
            values.append(change.finished_at)
        if change.summary is not None:
            sets.append("summary = ?")
            values.append(_dump(dict(change.summary)))
        if change.binding is not None:
            sets.append("binding = ?")
            values.append(_dump(dict(change.binding)))
        if sets:
            self._db.execute(
                f"UPDATE runs SET {', '.join(sets)} WHERE run_id = ?", (*values, run_id)
            )
        if change.approval is not None:
            a = change.approval
            self._db.execute(
                "INSERT INTO approvals (approval_id, run_id, key, kind, status, digest, request,"
                " answer, created_at, answered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (approval_id) DO UPDATE SET status = excluded.status,"
                " answer = excluded.answer, answered_at = excluded.answered_at",
                (
                    a.approval_id,
                    a.run_id,
                    a.key,
                    a.kind.value,
                    a.status.value,
                    a.digest,
                    _dump(dict(a.request)),
                    None if a.answer is None else _dump(dict(a.answer)),
                    a.created_at,
                    a.answered_at,
                ),
            )

    def answer_approval(
        self, approval_id: str, status: ApprovalStatus, answer: Mapping[str, Any], at: str
    ) -> tuple[ApprovalRow, bool]:
        """Answer a pending approval. Returns the row and whether this call changed it.

        Answering again with the same status is a no-op (idempotent); a different answer to
        an already answered approval is refused.
        """
        with self._tx():
            row = self.get_approval(approval_id)
            if row is None:
                raise StoreError(
                    f"no approval {approval_id!r}",
                    code="APPROVAL404",
                    hint="list the queue with `rein approvals list`",
                )
            if row.status is not ApprovalStatus.PENDING:
                if row.status is status:
                    return row, False
                raise Refused(
                    f"approval {approval_id} was already answered: {row.status.value}",
                    code="APPROVAL_ANSWERED",
                    hint="an answer cannot be changed; start a new run to decide differently",
                )
            updated = ApprovalRow(
                approval_id=row.approval_id,
                run_id=row.run_id,
                key=row.key,
                kind=row.kind,
                status=status,
                digest=row.digest,
                request=row.request,
                created_at=row.created_at,
                answer=answer,
                answered_at=at,
            )
            self._append(
                row.run_id,
                "approval/answered",
                {"approval_id": row.approval_id, "key": row.key, "status": status.value},
                at,
            )
            self._apply(row.run_id, Transition(approval=updated))
            return updated, True

    # -- reads ---------------------------------------------------------------------------

    _RUN_COLUMNS = (
        "run_id, parent_run_id, parent_node_key, graph_id, graph_path, graph_digest, status,"
        " started_at, finished_at, binding, summary"
    )

    @staticmethod
    def _run(row: tuple[Any, ...]) -> RunRow:
        return RunRow(
            run_id=RunId(row[0]),
            parent_run_id=None if row[1] is None else RunId(row[1]),
            parent_node_key=None if row[2] is None else NodeKey(row[2]),
            graph_id=row[3],
            graph_path=row[4],
            graph_digest=row[5],
            status=RunStatus(row[6]),
            started_at=row[7],
            finished_at=row[8],
            binding=json.loads(row[9]),
            summary=json.loads(row[10]),
        )

    def get_run(self, run_id: str) -> RunRow | None:
        row = self._db.execute(
            f"SELECT {self._RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        return None if row is None else self._run(row)

    def list_runs(self, *, include_children: bool = False) -> list[RunRow]:
        where = "" if include_children else " WHERE parent_run_id IS NULL"
        rows = self._db.execute(
            f"SELECT {self._RUN_COLUMNS} FROM runs{where} ORDER BY created DESC"
        ).fetchall()
        return [self._run(r) for r in rows]

    def child_runs(self, parent_run_id: RunId) -> list[RunRow]:
        rows = self._db.execute(
            f"SELECT {self._RUN_COLUMNS} FROM runs WHERE parent_run_id = ? ORDER BY created",
            (parent_run_id,),
        ).fetchall()
        return [self._run(r) for r in rows]

    def nodes(self, run_id: RunId) -> list[NodeRow]:
        rows = self._db.execute(
            "SELECT node_key, node_id, scope_path, type, status, seq, record FROM nodes"
            " WHERE run_id = ? ORDER BY seq",
            (run_id,),
        ).fetchall()
        return [
            NodeRow(
                run_id=run_id,
                node_key=NodeKey(r[0]),
                node_id=r[1],
                scope_path=r[2],
                type=r[3],
                status=NodeStatus(r[4]),
                seq=r[5],
                record=json.loads(r[6]),
            )
            for r in rows
        ]

    def events(self, run_id: RunId, *, after: int = 0) -> list[Event]:
        rows = self._db.execute(
            "SELECT seq, type, payload, at FROM events WHERE run_id = ? AND seq > ? ORDER BY seq",
            (run_id, after),
        ).fetchall()
        return [
            Event(run_id=run_id, seq=r[0], type=r[1], payload=json.loads(r[2]), at=r[3])
            for r in rows
        ]

    @staticmethod
    def _approval(r: tuple[Any, ...]) -> ApprovalRow:
        return ApprovalRow(
            approval_id=ApprovalId(r[0]),
            run_id=RunId(r[1]),
            key=r[2],
            kind=ApprovalKind(r[3]),
            status=ApprovalStatus(r[4]),
            digest=r[5],
            request=json.loads(r[6]),
            answer=None if r[7] is None else json.loads(r[7]),
            created_at=r[8],
            answered_at=r[9],
        )

    _APPROVAL_COLUMNS = (
        "approval_id, run_id, key, kind, status, digest, request, answer, created_at, answered_at"
    )

    def approvals(
        self, *, run_id: RunId | None = None, status: ApprovalStatus | None = None
    ) -> list[ApprovalRow]:
        clauses, values = [], []
        if run_id is not None:
            clauses.append("run_id = ?")
            values.append(run_id)
        if status is not None:
            clauses.append("status = ?")
            values.append(status.value)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._db.execute(
            f"SELECT {self._APPROVAL_COLUMNS} FROM approvals{where} ORDER BY rowid", values
        ).fetchall()
        return [self._approval(r) for r in rows]

    def get_approval(self, approval_id: str) -> ApprovalRow | None:
        row = self._db.execute(
            f"SELECT {self._APPROVAL_COLUMNS} FROM approvals WHERE approval_id = ?",
            (approval_id,),
        ).fetchone()
        return None if row is None else self._approval(row)

    def close(self) -> None:
        self._db.close()
