"""One turn as it runs: its run, and the answers to its questions.

:class:`TurnRun` drives the turn's run (a graph turn first waits for its digest question,
:mod:`rein.engine.cases.sessions.digest`) and answers its questions through the one approval
queue, bound to the digest of what was shown; a thread's policy answers some itself
(``never``; an action accepted for the session: :meth:`TurnRun.standing`). How the turn
reads as it runs (its feed) is the protocol layer's (:mod:`rein.protocol.turns`), which
follows the run's stored events. :class:`rein.engine.cases.sessions.runtime.Sessions` makes them.

A turn whose run is refused before it starts (a configuration ``rein run`` would refuse, a
graph changed since its digest was accepted), or whose start raises, ends ``failed`` with
the error, recorded (:mod:`rein.engine.cases.sessions.ends`): its feed ends with ``error`` and
``turn/completed``, here and in every process that reads the thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from rein.core.frozen import Frozen
from rein.core.states import ANSWERS, ApprovalStatus
from rein.engine.cases.sessions import digest, ends
from rein.errors import ConfigError, Refused, ReinError
from rein.store.base import Event, Store, ThreadRow, ThreadTurnRow

if TYPE_CHECKING:
    from rein.engine.run.answering import Via
    from rein.engine.run.outcome import RunOutcome
    from rein.engine.run.prepare import Prepared

# A client's decision → the approval queue's answer. `acceptForSession` also accepts the
# same exact action (same digest) for the rest of the thread's life, in any process.
DECISIONS = MappingProxyType({**ANSWERS, "acceptForSession": ApprovalStatus.ACCEPTED})


class RunCalls(Frozen):
    """The run use cases a turn calls, handed in by the Harness: the engine's own for
    preparing and starting a run (:class:`rein.engine.run.prepare.Starter`, as ``rein run``
    prepares and starts one), the Harness's for the rest."""

    prepare: Callable[..., Prepared]  # (path, *, given) -> Prepared: Starter.prepare
    start: Callable[..., Awaitable[RunOutcome]]  # (prepared, *, approved): Starter.start
    resume: Callable[[str], Awaitable[RunOutcome]]
    cancel: Callable[..., Awaitable[RunOutcome]]  # (run_id, *, note)
    answer: Callable[..., Awaitable[Any]]  # (approval_id, status, *, digest, values, via, ...)
    check_executor: Callable[[], None]
    via: Callable[[str | None], Via]  # how an answer taken here is recorded (its standing)
    signers: Callable[[], Any]  # where answers are signed: who may sign (else None)


class Turns(Protocol):
    """What a turn uses of the runtime that made it
    (:class:`rein.engine.cases.sessions.runtime.Sessions`)."""

    store: Store
    calls: RunCalls
    runs: dict[str, asyncio.Future[str]]  # graph id → the run it started

    def now(self) -> str: ...
    def accepted_for_session(self, thread_id: str) -> frozenset[str]: ...
    def accept_for_session(self, thread_id: str, action: str) -> None: ...


class TurnRun:
    """One turn: its run, and the answers to its questions."""

    def __init__(self, sessions: Turns, thread: ThreadRow, turn: ThreadTurnRow, *,
                 start_lock: ends.StartLock | None = None) -> None:
        self.sessions, self.thread, self.row = sessions, thread, turn
        self.turn_id = turn.turn_id
        loop = asyncio.get_running_loop()
        self.run_id: asyncio.Future[str] = loop.create_future()
        self.ended: asyncio.Future[Event] = loop.create_future()  # its end, when recorded
        self.done = False  # its feed completed here (whoever follows it says so)
        self.waiting = False  # a graph turn's drive waits for its digest question's answer
        self._start_lock = start_lock  # held until the run exists or the end is recorded
        if turn.run_id is not None:
            self.run_id.set_result(turn.run_id)

    @property
    def graph(self) -> Mapping[str, Any] | None:
        """A graph turn's plan (id, digest, nodes, the plan's text); None for a
        conversation turn."""
        plan = self.row.input.get("plan") if self.row.input.get("kind") == "graph" else None
        return plan if isinstance(plan, Mapping) else None

    @property
    def asking(self) -> bool:
        """A graph turn whose run has not started: its digest question waits (or was just
        accepted)."""
        return self.graph is not None and not self.run_id.done()

    @property
    def log_id(self) -> str:
        """The turn's own log: its digest question and its answer, and its end."""
        return str(ends.log_of(self.row))

    def question_answer(self) -> ApprovalStatus | None:
        """How a graph turn's digest question was answered (None: it waits, or none)."""
        return digest.answer_of(self.sessions.store, self.row)

    def release(self) -> None:
        """Let go of the turn's start lock (a turn nobody starts then ends ``interrupted``
        at the next look, :func:`ends.settle`)."""
        lock, self._start_lock = self._start_lock, None
        if lock is not None:
            lock.release()

    def started(self, run_id: str) -> None:
        """The caller started the turn's run itself (the web console's lanes): recorded."""
        self.sessions.store.set_turn_run(self.turn_id, run_id)
        if not self.run_id.done():
            self.run_id.set_result(run_id)
        self.release()

    def record_run(self, run_id: str) -> None:
        """The turn's run is known here: recorded on the turn (once)."""
        if self.row.run_id is None:
            self.sessions.store.set_turn_run(self.turn_id, run_id)
            self.row = self.row.replace(run_id=run_id)

    def fail(self, exc: BaseException) -> None:
        """The turn's run could not start: the turn ends ``failed`` with ``exc``, recorded."""
        self._end("failed", exc)

    def _end(self, status: str, exc: BaseException) -> None:
        event = ends.record(self.sessions.store, self.row, status=status,
                            error=ends.error_of(exc), now=self.sessions.now())
        self.done = True
        if not self.ended.done():
            self.ended.set_result(event)
        if not self.run_id.done():  # steer and interrupt wait on it: they hear why
            self.run_id.set_exception(Refused(
                f"turn {self.turn_id} ended before its run started", code="THREAD005",
                hint="start a new turn (turn/start)"))
            self.run_id.exception()  # retrieved: nobody may be waiting on it
        self.release()

    async def drive(self) -> None:
        """Run the turn's graph to its end or first wait (or continue it after a crash). A
        start that is refused or raises ends the turn ``failed``, recorded; a non-rein
        error is raised after that, for the surface to report."""
        try:
            await self._drive()
        finally:
            self.release()

    async def _drive(self) -> None:
        calls, store = self.sessions.calls, self.sessions.store
        if self.run_id.done():
            run = store.get_run(self.run_id.result())
            # Continue a run its process left behind; one another process is advancing
            # right now is only followed (its events reach this feed from the store).
            if run is not None and run.status.value in ("running", "interrupted") and \
                    not store.run_locked(run.run_id):
                await calls.resume(run.run_id)
            return
        path = Path(str(self.row.input["graph"]))
        shown = None
        if self.graph is not None:  # the person approves the digest they were shown
            answered = self.question_answer()
            if answered is None:
                self.waiting = True  # nothing but the store holds this wait: droppable
                try:
                    answered = await digest.wait(store, self.row)
                finally:
                    self.waiting = False
            if answered is not ApprovalStatus.ACCEPTED:
                return
            shown = str(self.graph["digest"])
        try:
            prepared = calls.prepare(path, given={})
            calls.check_executor()  # refused before a run exists, as `rein run` does
        except ReinError as exc:
            self._end("failed", exc)
            return
        self.sessions.runs[str(prepared.data["id"])] = self.run_id
        try:
            # A conversation turn's graph is rein's own, written from the client's input
            # under the thread's policy: the client's turn/start is its approval.
            await calls.start(prepared, approved=shown or prepared.digest)
        except ReinError as exc:  # refused (APPROVAL_STALE, RT053), or stopped once begun
            self._end("failed", exc)
        except Exception as exc:
            self._end("failed", exc)
            raise
        except BaseException as exc:  # cancelled: a run that never began is left unstarted
            if not self.run_id.done():
                self.run_id.set_exception(exc)
            raise
        finally:
            self.sessions.runs.pop(str(prepared.data["id"]), None)

    async def run_or_end(self) -> None:
        """Wait until the turn's run exists, or its end is recorded (it never will)."""
        if not self.run_id.done():
            either: set[asyncio.Future[Any]] = {self.run_id, self.ended}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)

    def action_digest(self, approval_id: str) -> str | None:
        """The exact action a question is about (a tool call's digest), when it names one."""
        row = self.sessions.store.get_approval(approval_id)
        value = row.request.get("action_digest") if row is not None else None
        return str(value) if value else None

    def standing(self, approval_id: str) -> tuple[str, str] | None:
        """The decision the thread's standing instructions give a question, with which
        instruction it is, when no person needs to answer it: ``never`` declines every
        question; an action accepted for the session is accepted again."""
        if self.row.input.get("approvalPolicy") == "never":
            return "decline", "approval-policy-never"
        action = self.action_digest(approval_id)
        if action is not None and action in self.sessions.accepted_for_session(
                self.thread.thread_id):
            return "accept", "accept-for-session"
        return None

    async def answer(self, request_id: str, decision: str, *, digest: str | None = None,
                     values: Mapping[str, Any] | None = None,
                     standing: str | None = None) -> None:
        """Answer a question of this turn, bound to ``digest`` (the digest of what was
        shown); ``standing``: the person's standing instruction rein answers by, when no
        person answers this one (recorded with the answer)."""
        status = DECISIONS.get(decision)
        if status is None:
            raise ConfigError(f"unknown decision {decision!r}", code="THREAD002",
                              hint="answer accept, acceptForSession, decline or cancel")
        if decision == "acceptForSession":
            action = self.action_digest(request_id)
            if action is not None:
                self.sessions.accept_for_session(self.thread.thread_id, action)
        calls = self.sessions.calls
        await calls.answer(request_id, status, digest=digest or None, values=values,
                           via=calls.via(standing))

    async def interrupt(self) -> None:
        """Stop the turn: its run is cancelled and the turn ends ``interrupted`` (a graph
        turn still waiting for its digest approval ends without a run)."""
        calls = self.sessions.calls
        approval = digest.of(self.row)
        if self.asking and approval is not None and self.question_answer() is None:
            await calls.answer(approval, ApprovalStatus.CANCELLED, note="turn/interrupt",
                               via=calls.via("turn-interrupt"))
            return
        await self.run_or_end()
        if self.ended.done():  # it ended on its own: nothing left to stop
            return
        run_id = await self.run_id
        await calls.cancel(run_id, note="turn/interrupt")


__all__ = ["DECISIONS", "RunCalls", "TurnRun", "Turns"]
