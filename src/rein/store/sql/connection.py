"""The one connection and transaction every role of a SQL store shares.

A backend provides the connection, the transaction brackets, the migrations and the run
lock's handle; :class:`SQLConnection` does the rest: transactions (one per write, or grouped
by ``atomic()`` and ``batch()``), publication after commit, redaction, and the run lock. The
roles (:mod:`rein.store.sql`) are its subclasses, each with the portable SQL of its tables
written with ``?`` placeholders (rewritten to ``%s`` for PostgreSQL). The event log's write
path (every event with the state it changes, the events and node rows held back until the
next statement or the commit) is the event log role's
(:class:`rein.store.sql.events.EventsSQL`): the connection only asks it to write what it
holds before any other statement runs and at commit (:meth:`SQLConnection._write_due`), and
to forget it when the transaction ends (:meth:`SQLConnection._forget_due`).

Every value written goes through :func:`rein.formats.redaction.redact` first, with the
secrets this store knows (``secrets``: those of the process environment from the start, and
whatever the composition root adds with :meth:`SQLConnection.know`), so no event, node record,
run summary, approval or driver turn holds a secret, whoever built the value. What a write
returns is what was stored.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator

from rein.errors import Refused, ReinError, StoreError
from rein.formats.redaction import Secrets, known_secrets, redact
from rein.store.rows import CommitHook, Event

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

# Run locks this process holds: (store url, run id) → [depth, backend handle]. Process-wide
# on purpose: the lock excludes other processes, and a process may open the store twice.
_HELD: dict[tuple[str, str], list[Any]] = {}


def _encoder() -> Callable[[Any], str]:
    """One encoder for every write (a dozen per node): ``json.dumps`` with options builds a
    new ``JSONEncoder`` on each call, and its ``encode`` a new C encoder on each call. This
    builds the C encoder once (``JSONEncoder.encode``'s output, byte for byte), where there
    is one."""
    from json import encoder

    base = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    c_make_encoder = getattr(encoder, "c_make_encoder", None)  # not where C's is missing
    if c_make_encoder is None:
        return base.encode
    markers: dict[int, Any] = {}  # what is being encoded: a value that holds itself is refused
    chunks = c_make_encoder(markers, base.default, encoder.encode_basestring, None, ":", ",",
                            True, False, True)  # sort_keys, skipkeys, allow_nan
    join = "".join

    def encode(value: Any) -> str:
        try:
            return join(chunks(value, 0))
        except BaseException:
            markers.clear()  # a failure part-way leaves the containers it was inside
            raise

    return encode


#: Stored JSON: compact, sorted, UTF-8 kept as is (``dump(value)``: the encoder itself, a
#: dozen calls per node).
dump: Callable[[Any], str] = _encoder()


def dump_ordered(value: Any) -> str:
    """Stored JSON that keeps key order: a driver instruction is shown as it was built."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def host_name() -> str:
    """This machine's name, to tell whose processes a row describes."""
    import socket  # only a writer records its host: a read does not import the network

    return socket.gethostname()


# Events a held transaction gathers before a held write commits anyway: writes that follow
# one another without the event loop turning (the items of a map whose body calls no
# worker) would otherwise all wait in one transaction, in memory, until the map ends.
HELD_MAX = 500


class SQLConnection:
    """The connection and transaction under every role of a SQL store."""

    placeholder = "?"
    approval_order = "rowid"  # insertion order of the approval queue
    url: str = ""

    def __init__(self) -> None:
        self._depth = 0
        self._begun = False  # the open transaction has sent its BEGIN (batch() defers it)
        self._broken = False  # a write inside it failed part-way: it must not commit
        self._held = False  # the last write's commit waits for the next write (hold=True)
        self._carried = False  # a held write inside a batch() that has not written yet
        # Inside the open transaction only: the runs whose writers are already kept out.
        # It holds until commit, because this transaction excludes every other writer of
        # the run until then.
        self._serialized: set[str] = set()
        self.secrets: Secrets = known_secrets(os.environ)
        self._appended: list[Event] = []  # by the open transaction: published on commit
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
        """Execute one statement, once the rows the event log holds back are written (see
        :meth:`_write_due`): no statement but an event's own ever runs before them."""
        if self._due:
            self._write_due()
        return self._execute(sql, params)

    # -- rows held back until the next statement or the commit (the event log's) ----------

    _due = False  # the event log holds rows back (:class:`rein.store.sql.events.EventsSQL`)

    def _write_due(self) -> None:
        """Write the rows held back; the event log's (nothing is held back here)."""

    def _forget_due(self) -> None:
        """The transaction ended: forget what it held back (unwritten when it rolled back)
        and what it knew of its runs; the event log's (nothing here)."""

    def _stream(self, sql: str, params: tuple[Any, ...] | list[Any] = ()
                ) -> Iterator[tuple[Any, ...]]:
        """The rows of one query, read a few at a time where the backend can (SQLite): a
        read of a large run holds a page of rows, not the run. Here, all at once."""
        yield from self._x(sql, params).fetchall()

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
        """One write's transaction (see :meth:`_enter`)."""
        nested = self._enter()
        try:
            yield
        except BaseException:
            self._exit(nested, failed=True)
            raise
        self._exit(nested, failed=False)

    def _enter(self) -> bool:
        """Open one write's transaction, or join the open one: ``True`` when it joined
        (inside atomic() or batch(), whose outer transaction commits). :meth:`_exit` ends
        it; the bracket :meth:`_tx`, spelled out where a write runs once per event."""
        self._check_failed()
        if self._depth:
            if self._broken:
                raise StoreError("a write of this transaction failed earlier; it is being "
                                 "rolled back", code="STORE_FAILED",
                                 hint="run the command again")
            if not self._begun:
                if self._carried:  # a batch's first write: the held write's transaction
                    self._carried = False  # goes on, and commits with the batch
                else:
                    self._begin()
                self._begun = True
            self._depth += 1
            return True
        if self._held:  # the held write commits with this one
            self._held = False
        else:
            self._begin()
        self._begun, self._broken, self._depth = True, False, 1
        return False

    def _exit(self, nested: bool, *, failed: bool) -> None:
        """End what :meth:`_enter` opened: ``failed``, the write raised."""
        if nested:
            # A write (or a group of them) stopped part-way: what it wrote so far must
            # not commit with the writes around it.
            if failed:
                self._broken = True
            self._depth -= 1
            return
        if failed:
            self._close(commit=False)
            return
        hold, self._hold = self._hold and len(self._appended) < HELD_MAX, False
        if hold or (self._grouped and self._flush_soon()):
            self._held, self._depth = True, 0
            self._carrying = True
            return
        self._close(commit=True)

    _hold = False  # set by a write asked to hold its commit, read as its transaction ends

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

    def flush_soon(self) -> None:
        """Commit a held write on the running loop's next turn, one callback for all the
        writes held before it (not one per write, which a map whose items never let the
        loop turn would pile up); now, when no loop runs here."""
        if not self._flush_soon():
            self.flush()

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
        self._serialized.clear()
        if not (begun and commit):
            self._appended = []  # rolled back (or nothing written): never published
            self._forget_due()
            if begun:
                self._end(commit=False)
            return
        try:
            self._write_due()
        except BaseException as exc:
            self._appended = []
            self._forget_due()
            self._end(commit=False)
            if carrying:
                self._lost(exc)
            raise
        self._forget_due()
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

        A held write (:meth:`transition`) joins the batch: the held write and the batch's
        writes commit as one (a node's end and the edges it resolves: one commit, not two).
        A batch that writes nothing leaves it held. When a write of the batch fails
        part-way, the batch rolls back with the held write in it, whose writer was told it
        was written: the store then writes nothing more (every later write raises), as when
        a held write's commit fails, so the run stops where its file says it is and
        resuming takes the lost steps again, as after a crash.
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
        except BaseException as exc:
            if not self._carry_on():
                broken, carrying = self._broken, self._carrying
                self._close(commit=not broken)
                if broken and carrying:
                    self._lost(exc)
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

    def _serialize_once(self, run_id: str) -> None:
        """Inside a write transaction: keep other writers of ``run_id`` out until commit
        (once per transaction)."""
        if run_id not in self._serialized:
            self._serialize_run(run_id)
            self._serialized.add(run_id)

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

    # -- the change signal ----------------------------------------------------------------

    def changes(self) -> int | None:
        """Whether another connection committed: a backend that can tell says how
        (:meth:`rein.store.base.Events.changes`); None here."""
        return None
