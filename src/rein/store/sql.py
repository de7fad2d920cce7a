"""What the SQLite and PostgreSQL stores share: the SQL of every read and write.

A backend provides the connection, the transaction brackets, the migrations and the run
lock; this class does the rest with portable SQL written with ``?`` placeholders (rewritten
to ``%s`` for PostgreSQL). Every write method is one transaction: the event row and the
state it describes commit together or not at all. ``atomic()`` groups several writes into
one transaction where a step needs more than one event (a run and its graph approval).

Every value written goes through :func:`rein.formats.redaction.redact` first, with the
secrets this store knows (``secrets``: those of the process environment from the start, and
whatever the composition root adds with :meth:`SQLStore.know`), so no event, node record,
run summary, approval or driver turn holds a secret, whoever built the value. What a write
returns is what was stored.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus, TurnStatus
from rein.errors import Refused, ReinError, StoreError
from rein.formats.redaction import Secrets, known_secrets, redact
from rein.store.base import (
    ApprovalRow,
    CommitHook,
    DriverTurn,
    Event,
    NodeRow,
    ProcessRow,
    RunRow,
    ThreadRow,
    ThreadTurnRow,
    Transition,
    WorkspaceRef,
)
from rein.store.lazy_json import LazyObject

# Run locks this process holds: (store url, run id) → [depth, backend handle]. Process-wide
# on purpose: the lock excludes other processes, and a process may open the store twice.
_HELD: dict[tuple[str, str], list[Any]] = {}


# One encoder for every write (several per node): json.dumps with options builds a new one
# on each call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def dump(value: Any) -> str:
    """Stored JSON: compact, sorted, UTF-8 kept as is."""
    return _ENCODE(value)


def dump_ordered(value: Any) -> str:
    """Stored JSON that keeps key order: a driver instruction is shown as it was built."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def host_name() -> str:
    """This machine's name, to tell whose processes a row describes."""
    import socket  # only a writer records its host: a read does not import the network

    return socket.gethostname()


ROWS_PER_STATEMENT = 100  # a multi-row INSERT's rows: SQLite allows 32766 parameters


def _parts(rows: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    return [rows[i:i + ROWS_PER_STATEMENT] for i in range(0, len(rows), ROWS_PER_STATEMENT)]


class SQLStore:
    """The shared implementation of :class:`rein.store.base.Store`."""

    placeholder = "?"
    approval_order = "rowid"  # insertion order of the approval queue
    url: str = ""

    def __init__(self) -> None:
        self._depth = 0
        self._begun = False  # the open transaction has sent its BEGIN (batch() defers it)
        self._broken = False  # a write inside it failed part-way: it must not commit
        self._held = False  # the last write's commit waits for the next write (hold=True)
        self._carried = False  # a held write inside a batch() that has not written yet
        # Inside the open transaction only: the last event seq appended per run, and the
        # runs whose writers are already kept out. Both hold until commit, because this
        # transaction excludes every other writer of the run until then.
        self._seq: dict[str, int] = {}
        self._serialized: set[str] = set()
        self.secrets: Secrets = known_secrets(os.environ)
        self._appended: list[Event] = []  # by the open transaction: published on commit
        # The open transaction's last node row, not yet written: the next write of the same
        # node replaces it (a node's start and its first attempt's, an attempt's end and
        # the node's, commit together), anything else writes it first (see _x).
        # The open transaction's events and node rows, not yet written: a later row of the
        # same node replaces its earlier one, and all are written in one statement each
        # before any other statement or the commit (see _x).
        self._events_due: list[tuple[Any, ...]] = []
        self._node_rows: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._hooks: list[CommitHook] = []
        self._grouped = False  # every write holds its commit until the loop's next turn
        self._flush_due = False  # a flush is scheduled on the running loop
        # A commit that failed (a held write's among it, perhaps, on the loop's turn where no
        # one hears it): every later write, and close(), raises it (see _lost).
        self._failed: ReinError | None = None
        # The open transaction holds a write whose call already returned (held): if it does
        # not commit, its writer was told otherwise.
        self._carrying = False
        self._failed_told = False  # raised to a caller already: close() need not again

    # -- publication ----------------------------------------------------------------------

    def on_commit(self, hook: CommitHook) -> Callable[[], None]:
        """Call ``hook`` with the events of every transaction committed from now on."""
        self._hooks.append(hook)

        def remove() -> None:
            if hook in self._hooks:
                self._hooks.remove(hook)

        return remove

    def _published(self) -> None:
        # After the commit, never before: a hook sees only what a reader of the store sees.
        events, self._appended = self._appended, []
        if events and self._hooks:
            published = tuple(events)
            for hook in list(self._hooks):
                hook(published)

    # -- redaction ------------------------------------------------------------------------

    def know(self, secrets: Secrets) -> None:
        """Redact ``secrets`` too from everything written from now on."""
        self.secrets = self.secrets | secrets

    def redact(self, value: Any) -> Any:
        """``value`` as this store would write it."""
        return redact(value, self.secrets)

    # -- backend hooks --------------------------------------------------------------------

    def _execute(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> Any:
        """Execute one statement; returns a cursor."""
        raise NotImplementedError

    def _x(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> Any:
        """Execute one statement, once the node row held back (see :meth:`_apply`) is
        written: no statement but an event's own ever runs before it."""
        if self._events_due or self._node_rows:
            self._write_due()
        return self._execute(sql, params)

    def _begin(self) -> None:
        raise NotImplementedError

    def _end(self, commit: bool) -> None:
        raise NotImplementedError

    def _serialize_run(self, run_id: str) -> None:
        """Inside a write transaction: keep other writers of this run out until commit."""

    # -- transactions ---------------------------------------------------------------------

    def _check_failed(self) -> None:
        """Raise the commit failure a held write met on the loop's turn, if any."""
        if self._failed is not None:
            failed = self._failed
            self._failed_told = True
            raise StoreError(f"an earlier commit failed ({failed.code}: {failed.message}); "
                             "nothing written after it was kept", code=failed.code,
                             hint="the run stopped where it was: once the cause is fixed "
                                  "(see the code), `rein resume RUN` continues it")

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        self._check_failed()
        if self._depth:  # nested in atomic() or batch(): the outer transaction commits
            if self._broken:
                raise StoreError("a write of this transaction failed earlier; it is being "
                                 "rolled back", code="STORE_FAILED",
                                 hint="run the command again")
            if not self._begun:
                if self._carried:  # a batch's first write: the held write commits first
                    self._commit_carried()
                self._begin()
                self._begun = True
            self._depth += 1
            try:
                yield
            except BaseException:
                # A write (or a group of them) stopped part-way: what it wrote so far must
                # not commit with the writes around it.
                self._broken = True
                raise
            finally:
                self._depth -= 1
            return
        if self._held:  # the held write commits with this one
            self._held = False
        else:
            self._begin()
        self._begun, self._broken, self._depth = True, False, 1
        try:
            yield
        except BaseException:
            self._close(commit=False)
            raise
        if self._hold or (self._grouped and self._flush_soon()):
            self._hold, self._held, self._depth = False, True, 0
            self._carrying = True
            return
        self._close(commit=True)

    _hold = False  # set by a write asked to hold its commit, read as its transaction ends

    def _commit_carried(self) -> None:
        """Commit the held write a batch carried, on its own, before the batch begins."""
        depth, self._carried = self._depth, False
        self._begun = True  # the held write's transaction
        try:
            self._close(commit=True)
        finally:
            self._depth = depth

    def group_commits(self) -> None:
        """From now on, hold every write's commit until the running event loop's next turn,
        so the writes that tasks woken together make (attempts that ended together) share
        one transaction: what :meth:`transition`'s ``hold`` does for one write, for all.

        Nothing is done between a write and that turn but other synchronous writes: any wait
        on the outside world (a thread, a socket) lets the loop turn and commits first. So a
        crash loses at most the writes of one turn, each of which the run redoes when
        resumed. For the executors whose attempts' answers are durable elsewhere (DBOS).
        """
        self._grouped = True

    def _flush_soon(self) -> bool:
        """Schedule a flush on the running loop (once); ``False`` when no loop runs here."""
        if self._flush_due:
            return True
        import asyncio

        try:
            asyncio.get_running_loop().call_soon(self.flush_on_loop)
        except RuntimeError:
            return False
        self._flush_due = True
        return True

    def flush(self) -> None:
        """Commit a held write now (see :meth:`transition`); nothing when none is held."""
        self._flush_due = False
        if self._held and not self._depth:
            self._held = False
            self._close(commit=True)

    def _raise_untold(self) -> None:
        """At close: a failure no write has raised yet is raised now."""
        if self._failed is not None and not self._failed_told:
            self._check_failed()

    def flush_on_loop(self) -> None:
        """:meth:`flush`, as the event loop calls it on its next turn: a failure there has no
        caller to raise to, so it is kept and raised by the next write (or :meth:`close`),
        which stops whoever would go on as if the held write had committed."""
        try:
            self.flush()
        except ReinError:
            self._failed_told = False  # no one heard it: the next write, or close(), says it

    def _close(self, *, commit: bool) -> None:
        """End the outermost transaction; publish its events when it committed."""
        begun, carrying = self._begun, self._carrying
        self._depth, self._begun, self._broken = 0, False, False
        self._carrying = False
        self._seq.clear()
        self._serialized.clear()
        if not (begun and commit):
            self._appended = []  # rolled back (or nothing written): never published
            self._events_due, self._node_rows = [], {}
            if begun:
                self._end(commit=False)
            return
        try:
            self._write_due()
        except BaseException as exc:
            self._appended, self._events_due, self._node_rows = [], [], {}
            self._end(commit=False)
            if carrying:
                self._lost(exc)
            raise
        try:
            self._end(commit=True)
        except BaseException as exc:
            self._appended = []
            if carrying:
                self._lost(exc)
            raise
        self._published()

    def _lost(self, exc: BaseException) -> None:
        """A transaction that held a write whose writer was told it was written (a held
        write) did not commit: the store writes nothing more (every later write, and
        close(), raises this), so no one goes on from a state the file does not hold. A new
        store object, opened by whoever resumes the run, starts over. A transaction of one
        caller's writes alone that fails is that caller's to hear, and the store goes on."""
        if isinstance(exc, ReinError) and self._failed is None:
            self._failed, self._failed_told = exc, True  # raised to this caller now

    def atomic(self) -> contextlib.AbstractContextManager[None]:
        """Group several writes into one transaction (all of them, or none)."""
        self._check_failed()
        self.flush()  # a held write is not part of the group: rolling it back must not undo it
        return self._tx()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Let the writes made inside share one transaction, for throughput.

        Unlike :meth:`atomic`, each write stays a complete change of its own: when the code
        between writes raises, the writes made before it commit (as they would have one by
        one) and the exception goes on; only a write that itself failed part-way rolls the
        batch back. ``BEGIN`` waits for the first write, so a batch that writes nothing
        costs nothing. The block must not await: another task's writes would join it.

        A held write (:meth:`transition`) goes through a batch that writes nothing still
        held, and is committed on its own at the batch's first write, before its ``BEGIN``:
        never part of the batch, so a batch rolled back cannot undo it.
        """
        if self._depth:  # inside atomic() or another batch: the outer one decides
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._check_failed()
        if self._held and self._grouped:  # grouped: the held writes and these commit as one
            self._held = False
            self._begun, self._broken, self._depth = True, False, 1
        else:
            self._carried, self._held = self._held, False
            self._begun, self._broken, self._depth = False, False, 1
        try:
            yield
        except BaseException:
            if not self._carry_on():
                self._close(commit=not self._broken)
            raise
        if self._carry_on():
            return
        if self._begun and self._grouped and self._flush_soon():
            self._held, self._depth = True, 0
            self._carrying = True
            return
        self._close(commit=True)

    def _carry_on(self) -> bool:
        """At the end of a batch that wrote nothing: the held write it carried stays held."""
        if not self._carried:
            return False
        self._carried, self._held, self._depth, self._broken = False, True, 0, False
        self._carrying = True
        self._begun = True  # the held write's transaction is still open
        return True

    # -- writes ---------------------------------------------------------------------------

    def create_run(self, run: RunRow, *, event_type: str, payload: Mapping[str, Any]) -> Event:
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
        with self._tx():
            event = self._append(run_id, event_type, payload, at)
            if change is not None:
                self._apply(run_id, change)
            if hold and self._depth == 1:  # inside atomic() or batch(): the group decides
                self._hold = True
            return event

    def _serialize_once(self, run_id: str) -> None:
        if run_id not in self._serialized:
            self._serialize_run(run_id)
            self._serialized.add(run_id)

    def _append(self, run_id: str, event_type: str, payload: Mapping[str, Any], at: str) -> Event:
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
        payload = self.redact(dict(payload))
        self._events_due.append((run_id, seq, event_type, dump(payload), at))
        self._seq[run_id] = seq
        event = Event(run_id=RunId(run_id), seq=seq, type=event_type, payload=payload, at=at)
        self._appended.append(event)
        return event

    def _apply(self, run_id: str, change: Transition) -> None:
        if change.node is not None:
            n = change.node
            # Held back until another statement or the commit: replaced by a later row of
            # the same node, it is never written (the row that commits is the same).
            self._node_rows[(run_id, n.node_key)] = (
                run_id, n.node_key, n.node_id, n.scope_path, n.type, n.status.value,
                dump(self.redact(dict(n.record))))
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
        :data:`ROWS_PER_STATEMENT`). A new node row takes the next ``seq`` of its run, in the
        order the rows were first held; rows that exist keep theirs."""
        events, self._events_due = self._events_due, []
        rows, self._node_rows = list(self._node_rows.values()), {}
        for part in _parts(events):
            self._execute("INSERT INTO events (run_id, seq, type, payload, at) VALUES "
                          + ", ".join(["(?, ?, ?, ?, ?)"] * len(part)),
                          [v for row in part for v in row])
        for part in _parts(rows):
            values: list[str] = []
            params: list[Any] = []
            for i, r in enumerate(part):
                values.append("(?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + ? FROM nodes"
                              " WHERE run_id = ?), ?)")
                params.extend((*r[:6], i + 1, r[0], r[6]))
            self._execute(
                "INSERT INTO nodes (run_id, node_key, node_id, scope_path, type, status, seq,"
                " record) VALUES " + ", ".join(values) +
                " ON CONFLICT (run_id, node_key) DO UPDATE SET status = excluded.status,"
                " record = excluded.record", params)

    def answer_approval(self, approval_id: str, status: ApprovalStatus,
                        answer: Mapping[str, Any], at: str, *, event_type: str,
                        payload: Mapping[str, Any]) -> tuple[ApprovalRow, bool]:
        """Answer a pending approval with the event the caller names. Returns the row and
        whether this call changed it.

        Answering again with the same status is a no-op (idempotent, no event); a different
        answer to an already answered approval is refused.
        """
        answer = self.redact(dict(answer))
        with self._tx():
            row = self.get_approval(approval_id)
            if row is None:
                raise StoreError(f"no approval {approval_id!r}", code="APPROVAL404",
                                 hint="list the queue with `rein approvals list`")
            self._serialize_once(row.run_id)
            row = self.get_approval(approval_id)  # again, now that no one else can write it
            assert row is not None
            if row.status is not ApprovalStatus.PENDING:
                if row.status is status:
                    return row, False
                raise Refused(
                    f"approval {approval_id} was already answered: {row.status.value}",
                    code="APPROVAL_ANSWERED",
                    hint="an answer cannot be changed; start a new run to decide differently")
            updated = ApprovalRow(
                approval_id=row.approval_id, run_id=row.run_id, key=row.key, kind=row.kind,
                status=status, digest=row.digest, request=row.request,
                created_at=row.created_at, answer=answer, answered_at=at)
            self._append(row.run_id, event_type, payload, at)
            self._apply(row.run_id, Transition(approval=updated))
            return updated, True

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

    def node(self, run_id: RunId, node_key: str) -> NodeRow | None:
        r = self._x("SELECT node_key, node_id, scope_path, type, status, seq, record"
                    " FROM nodes WHERE run_id = ? AND node_key = ?", (run_id, node_key)
                    ).fetchone()
        return None if r is None else NodeRow(
            run_id=run_id, node_key=NodeKey(r[0]), node_id=r[1], scope_path=r[2], type=r[3],
            status=NodeStatus(r[4]), seq=r[5], record=json.loads(r[6]))

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

    _APPROVAL_COLUMNS = ("approval_id, run_id, key, kind, status, digest, request, answer,"
                         " created_at, answered_at")

    @staticmethod
    def _approval(r: tuple[Any, ...]) -> ApprovalRow:
        return ApprovalRow(
            approval_id=ApprovalId(r[0]), run_id=RunId(r[1]), key=r[2], kind=ApprovalKind(r[3]),
            status=ApprovalStatus(r[4]), digest=r[5], request=json.loads(r[6]),
            answer=None if r[7] is None else json.loads(r[7]), created_at=r[8],
            answered_at=r[9])

    def approvals(self, *, run_id: RunId | None = None, status: ApprovalStatus | None = None
                  ) -> list[ApprovalRow]:
        clauses: list[str] = []
        values: list[Any] = []
        if run_id is not None:
            clauses.append("run_id = ?")
            values.append(run_id)
        if status is not None:
            clauses.append("status = ?")
            values.append(status.value)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._x(f"SELECT {self._APPROVAL_COLUMNS} FROM approvals{where}"
                       f" ORDER BY {self.approval_order}", values).fetchall()
        return [self._approval(r) for r in rows]

    def get_approval(self, approval_id: str) -> ApprovalRow | None:
        row = self._x(f"SELECT {self._APPROVAL_COLUMNS} FROM approvals WHERE approval_id = ?",
                      (approval_id,)).fetchone()
        return None if row is None else self._approval(row)

    # -- driver turns ---------------------------------------------------------------------

    _TURN_COLUMNS = ("token, run_id, root_run_id, node_key, attempt, kind, status, instruction,"
                     " baseline, answer, created_at, answered_at")

    @staticmethod
    def _turn(r: tuple[Any, ...]) -> DriverTurn:
        return DriverTurn(
            token=r[0], run_id=RunId(r[1]), root_run_id=RunId(r[2]), node_key=r[3],
            attempt=int(r[4]), kind=r[5], status=TurnStatus(r[6]),
            # The snapshot is parsed as far as it is read: most reads want only its root.
            instruction=json.loads(r[7]), baseline=LazyObject(r[8]),
            answer=None if r[9] is None else json.loads(r[9]), created_at=r[10],
            answered_at=r[11])

    def driver_turn(self, token: str) -> DriverTurn | None:
        """The turn with ``token``, or ``None``."""
        row = self._x(f"SELECT {self._TURN_COLUMNS} FROM driver_turns WHERE token = ?",
                      (token,)).fetchone()
        return None if row is None else self._turn(row)

    def driver_turns(self, root_run_id: str, *, status: TurnStatus | None = None
                     ) -> list[DriverTurn]:
        """The turns of one run family, oldest first (only those in ``status`` if given)."""
        sql = f"SELECT {self._TURN_COLUMNS} FROM driver_turns WHERE root_run_id = ?"
        values: list[Any] = [root_run_id]
        if status is not None:
            sql += " AND status = ?"
            values.append(status.value)
        rows = self._x(sql + " ORDER BY ord, token", values).fetchall()
        return [self._turn(r) for r in rows]

    def add_driver_turn(self, turn: DriverTurn, *, event_type: str,
                        payload: Mapping[str, Any]) -> tuple[DriverTurn, bool]:
        """Insert ``turn`` with its event, atomically, unless its token exists: returns the
        stored row and whether this call inserted it (asking twice never adds a turn)."""
        turn = self._redacted_turn(turn)
        with self._tx():
            # ``ord`` is MAX + 1 within the family: keep other writers of the family out.
            self._serialize_once(turn.root_run_id)
            existing = self.driver_turn(turn.token)
            if existing is not None:
                return existing, False
            self._x(f"INSERT INTO driver_turns ({self._TURN_COLUMNS}, ord) VALUES"
                    " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(ord), 0) + 1"
                    " FROM driver_turns WHERE root_run_id = ?))",
                    (turn.token, turn.run_id, turn.root_run_id, turn.node_key, turn.attempt,
                     turn.kind, turn.status.value, dump_ordered(turn.instruction),
                     dump_ordered(turn.baseline),
                     None if turn.answer is None else dump_ordered(turn.answer),
                     turn.created_at, turn.answered_at, turn.root_run_id))
            self._append(turn.run_id, event_type, payload, turn.created_at)
            return turn, True

    def answer_driver_turn(self, token: str, answer: Mapping[str, Any], at: str, *,
                           event_type: str, payload: Mapping[str, Any]
                           ) -> tuple[DriverTurn, bool]:
        """Consume an envelope for the pending turn ``token`` with its event, atomically.

        A compare-and-set: of concurrent answers exactly one changes the row. Returns
        ``(turn, changed)``; the same envelope again (``answer["envelope"]``) changes nothing,
        another envelope for an answered turn is refused (``DRIVER_ANSWERED``).
        """
        answer = self.redact(dict(answer))  # compared as stored: a resent envelope matches
        with self._tx():
            turn = self.driver_turn(token)
            if turn is None:
                raise StoreError(f"no driver instruction {token!r}", code="DRIVER404",
                                 hint="print the pending instruction with `rein next`")
            self._serialize_once(turn.run_id)
            turn = self.driver_turn(token)  # again, now that no one else can write it
            assert turn is not None
            if turn.status is TurnStatus.ANSWERED:
                if dump((turn.answer or {}).get("envelope")) == dump(answer.get("envelope")):
                    return turn, False
                raise Refused(f"instruction {token} was already answered with another envelope",
                              code="DRIVER_ANSWERED",
                              hint="an answer cannot be changed; print the current "
                                   "instruction with `rein next`")
            self._x("UPDATE driver_turns SET status = ?, answer = ?, answered_at = ?"
                    " WHERE token = ? AND status = ?",
                    (TurnStatus.ANSWERED.value, dump_ordered(answer), at, token,
                     TurnStatus.PENDING.value))
            self._append(turn.run_id, event_type, payload, at)
            return DriverTurn(
                token=turn.token, run_id=turn.run_id, root_run_id=turn.root_run_id,
                node_key=turn.node_key, attempt=turn.attempt, kind=turn.kind,
                status=TurnStatus.ANSWERED, instruction=turn.instruction,
                baseline=turn.baseline, created_at=turn.created_at, answer=dict(answer),
                answered_at=at), True

    def _redacted_turn(self, turn: DriverTurn) -> DriverTurn:
        return turn.replace(
            instruction=self.redact(dict(turn.instruction)),
            baseline=self.redact(dict(turn.baseline)),
            answer=None if turn.answer is None else self.redact(dict(turn.answer)))

    # -- the run lock ---------------------------------------------------------------------

    @contextlib.contextmanager
    def lock_run(self, run_id: str) -> Iterator[None]:
        """Hold the right to advance ``run_id``; refuse at once if another process has it.

        Re-entrant within a process (a command may hold it around a step that advances the
        run through another store object). The lock dies with its holder: a killed process
        cannot leave a run locked (see the backends for how).
        """
        key = (self.url, run_id)
        held = _HELD.get(key)
        if held is not None:
            held[0] += 1
            try:
                yield
            finally:
                held[0] -= 1
            return
        handle = self._acquire(run_id)
        if handle is None:
            raise Refused(f"run {run_id} is being advanced by another rein process",
                          code="RUN_LOCKED",
                          hint="wait for it to finish or pause (watch it with "
                               f"`rein runs events {run_id} --follow`), then retry")
        _HELD[key] = [1, handle]
        try:
            yield
        finally:
            del _HELD[key]
            try:
                self.flush()  # whoever advances the run next finds every write of ours
            finally:
                self._release(run_id, handle)

    def held_here(self, run_id: str) -> bool:
        """Whether this process holds the run lock of ``run_id`` (through any store object)."""
        return (self.url, run_id) in _HELD

    def run_locked(self, run_id: str) -> bool:
        """Whether some process (this one included) holds the run lock of ``run_id`` now."""
        if self.held_here(run_id):
            return True
        handle = self._acquire(run_id)
        if handle is None:
            return True
        self._release(run_id, handle)
        return False

    def _acquire(self, run_id: str) -> Any:
        """A handle when the lock was taken, ``None`` when someone else holds it."""
        raise NotImplementedError

    def _release(self, run_id: str, handle: Any) -> None:
        raise NotImplementedError

