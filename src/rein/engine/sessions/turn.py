"""One turn as it runs: its run, its feed, and the answers to its questions.

:class:`TurnRun` drives the turn's run (a graph turn first waits for its digest question,
:mod:`rein.engine.sessions.digest`), streams its feed folded from the stored events, and
answers its questions through the one approval queue, bound to the digest of what was
shown; a thread's policy answers some itself (``never``; an action accepted for the
session). :class:`rein.engine.sessions.runtime.Sessions` makes them.

A turn whose run is refused before it starts (a configuration ``rein run`` would refuse, a
graph changed since its digest was accepted), or whose start raises, ends ``failed`` with
the error, recorded (:mod:`rein.engine.sessions.ends`): its feed ends with ``error`` and
``turn/completed``, here and in every process that reads the thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rein.core.ids import RunId
from rein.core.states import ApprovalStatus
from rein.engine import events
from rein.engine.answering import Via
from rein.engine.sessions import digest, ends, fields
from rein.engine.sessions.feed import Message, ServerRequest
from rein.errors import ConfigError, Refused, ReinError
from rein.store.base import Event, ThreadRow, ThreadTurnRow

if TYPE_CHECKING:
    from rein.engine.service import Harness
    from rein.engine.sessions.runtime import Sessions

# A client's decision → the approval queue's answer. `acceptForSession` also accepts the
# same exact action (same digest) for the rest of the thread's life, in any process.
DECISIONS = {"accept": ApprovalStatus.ACCEPTED, "acceptForSession": ApprovalStatus.ACCEPTED,
             "decline": ApprovalStatus.DECLINED, "cancel": ApprovalStatus.CANCELLED}


class TurnRun:
    """One turn: its run, its feed as it happens, and the answers to its questions."""

    def __init__(self, sessions: Sessions, thread: ThreadRow, turn: ThreadTurnRow, *,
                 start_lock: ends.StartLock | None = None) -> None:
        self.sessions, self.thread, self.row = sessions, thread, turn
        self.turn_id = turn.turn_id
        self.feed = sessions._feed(thread, turn)
        loop = asyncio.get_running_loop()
        self.run_id: asyncio.Future[str] = loop.create_future()
        self.ended: asyncio.Future[Event] = loop.create_future()  # its end, when recorded
        self.done = False
        self.waiting = False  # a graph turn's drive waits for its digest question's answer
        self._start_lock = start_lock  # held until the run exists or the end is recorded
        if turn.run_id is not None:
            self.run_id.set_result(turn.run_id)

    @property
    def harness(self) -> Harness:
        return self.sessions.harness

    @property
    def asking(self) -> bool:
        """A graph turn whose run has not started: its digest question waits (or was just
        accepted)."""
        return self.feed.graph is not None and not self.run_id.done()

    def release(self) -> None:
        """Let go of the turn's start lock (a turn nobody starts then ends ``interrupted``
        at the next look, :func:`ends.settle`)."""
        lock, self._start_lock = self._start_lock, None
        if lock is not None:
            lock.release()

    def started(self, run_id: str) -> None:
        """The caller started the turn's run itself (the web console's lanes): recorded."""
        self.harness.store.set_turn_run(self.turn_id, run_id)
        if not self.run_id.done():
            self.run_id.set_result(run_id)
        self.release()

    def fail(self, exc: BaseException) -> None:
        """The turn's run could not start: the turn ends ``failed`` with ``exc``, recorded."""
        self._end("failed", exc)

    def _end(self, status: str, exc: BaseException) -> None:
        event = ends.record(self.harness.store, self.row, status=status,
                            error=ends.error_of(exc), now=self.sessions._now())
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
        harness = self.harness
        if self.run_id.done():
            run = harness.store.get_run(self.run_id.result())
            # Continue a run its process left behind; one another process is advancing
            # right now is only followed (its events reach this feed from the store).
            if run is not None and run.status.value in ("running", "interrupted") and \
                    not harness.store.run_locked(run.run_id):
                await harness.resume(run.run_id)
            return
        path = Path(str(self.row.input["graph"]))
        shown = None
        if self.feed.graph is not None:  # the person approves the digest they were shown
            store = harness.store
            answered = digest.answer_of(store, self.row)
            if answered is None:
                self.waiting = True  # nothing but the store holds this wait: droppable
                try:
                    answered = await digest.wait(store, self.row)
                finally:
                    self.waiting = False
            if answered is not ApprovalStatus.ACCEPTED:
                return
            shown = str(self.feed.graph["digest"])
        try:
            prepared = await harness.prepare(path, given={})
            harness.check_executor()  # refused before a run exists, as `rein run` does
        except ReinError as exc:
            self._end("failed", exc)
            return
        self.sessions._runs[str(prepared.data["id"])] = self.run_id
        try:
            # A conversation turn's graph is rein's own, written from the client's input
            # under the thread's policy: the client's turn/start is its approval.
            await harness.start(prepared, approved=shown or prepared.digest)
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
            self.sessions._runs.pop(str(prepared.data["id"]), None)

    def stream(self, *, replay: bool = True) -> AsyncIterator[Message]:
        """The turn's feed, from its start (``replay=False``: what its run has stored when
        this is called is folded silently, and only pending questions and later events
        are given), to its end."""
        stored = None
        if not replay and self.run_id.done() and self.run_id.exception() is None:
            stored = self.harness.store.events(RunId(self.run_id.result()))
        return self._stream(replay=replay, stored=stored)

    async def _stream(self, *, replay: bool, stored: list[Event] | None
                      ) -> AsyncIterator[Message]:
        if self.asking:
            async for message in self._asking(replay=replay):
                yield message
            if self.done:
                return
            replay = True  # what the run records next is new to this client
        await self._run_or_end()
        if self.ended.done() and self.run_id.done() and self.run_id.exception() is not None:
            ending = self.feed.apply(self.ended.result())
            self.done = True
            for message in ending:
                yield message
            return
        run_id = await self.run_id
        store = self.harness.store
        if self.row.run_id is None:
            store.set_turn_run(self.turn_id, run_id)
        after = 0
        if not replay:
            for event in stored if stored is not None else store.events(RunId(run_id)):
                self.feed.apply(event)
                after = event.seq
            for request in list(self.feed.pending.values()):
                async for message in self._vetted(request):
                    yield message
        try:
            # Until the run ends, or the turn does (its start raised: the run is stuck).
            follow = events.subscribe(store, run_id, after, until_ended=True)
            async for event in until(follow, self.ended):
                after = event.seq
                async for message in self._told(event):
                    yield message
            if self.ended.done():
                for event in store.events(RunId(run_id), after=after):
                    async for message in self._told(event):
                        yield message
                ending = self.feed.apply(self.ended.result())
                self.done = self.feed.status != "inProgress"
                for message in ending:
                    yield message
        finally:
            self.done = self.feed.status != "inProgress"

    async def _run_or_end(self) -> None:
        """Wait until the turn's run exists, or its end is recorded (it never will)."""
        if not self.run_id.done():
            either: set[asyncio.Future[Any]] = {self.run_id, self.ended}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)

    async def _told(self, event: Event) -> AsyncIterator[Message]:
        """What one event of the run tells the client (its questions vetted). The turn is
        ``done`` before its ``turn/completed`` is given: a client that starts its next
        turn on hearing it must not find this one still in progress."""
        messages = self.feed.apply(event)
        if self.feed.status != "inProgress":
            self.done = True
        for message in messages:
            if isinstance(message, ServerRequest):
                async for vetted in self._vetted(message):
                    yield vetted
            else:
                yield message

    async def _asking(self, *, replay: bool) -> AsyncIterator[Message]:
        """A graph turn before its run: the opening, the digest question from the queue
        (asked again after a restart), its answer; ``done`` when nothing is to run."""
        store = self.harness.store
        opening = self.feed.opening(self.row.created_at)
        for message in opening if replay else ():
            yield message
        approval = digest.of(self.row)
        source = RunId(self.row.input.get("forkedFrom") or self.turn_id)
        stored = len(store.events(source)) if not replay else 0
        async for event in events.subscribe(store, source):
            fresh = event.seq > stored
            for message in self.feed.apply(event):
                if not isinstance(message, ServerRequest):
                    if fresh:
                        yield message
                # One asked before this stream began is asked again while it is open.
                elif fresh or digest.answer_of(store, self.row) is None:
                    asked = await self._vetted_once(message)
                    if asked is not None:
                        yield asked
            if event.type == "approval/answered" and \
                    event.payload.get("approval_id") == approval:
                break
        answered = digest.answer_of(store, self.row)
        if answered is not ApprovalStatus.ACCEPTED:
            assert answered is not None
            for message in self.feed.not_run(self.sessions._now(), WORDS[answered]):
                yield message
            self.done = True

    async def _vetted_once(self, request: ServerRequest) -> Message | None:
        """:meth:`_vetted` as a value: the question for the client, or None."""
        async for message in self._vetted(request):
            return message
        return None

    async def _vetted(self, request: ServerRequest) -> AsyncIterator[Message]:
        """A question the thread's policy answers itself (``never``: declined; the same
        action accepted for the session: accepted), or the question for the client."""
        action = _action_digest(self.harness, request.id)
        if self.row.input.get("approvalPolicy") == "never":
            asyncio.ensure_future(self.answer(request.id, "decline",
                                              standing="approval-policy-never"))
        elif action is not None and action in self.sessions.accepted_for_session(
                self.thread.thread_id):
            asyncio.ensure_future(self.answer(request.id, "accept",
                                              standing="accept-for-session"))
        else:
            yield fields.with_fields(request, self.harness.store.get_approval(request.id))

    async def answer(self, request_id: str, decision: str, *,
                     values: Mapping[str, Any] | None = None,
                     standing: str | None = None) -> None:
        """Answer a question of this turn (bound to the digest that was shown);
        ``standing``: the person's standing instruction rein answers by, when no person
        answers this one (recorded with the answer)."""
        status = DECISIONS.get(decision)
        if status is None:
            raise ConfigError(f"unknown decision {decision!r}", code="THREAD002",
                              hint="answer accept, acceptForSession, decline or cancel")
        request = self.feed.pending.get(request_id)
        shown = request.digest if request is not None else None
        if decision == "acceptForSession":
            action = _action_digest(self.harness, request_id)
            if action is not None:
                self.sessions.accept_for_session(self.thread.thread_id, action)
        await self.harness.answer(request_id, status, digest=shown or None, values=values,
                                  via=Via(surface=self.harness.surface, standing=standing))

    async def interrupt(self) -> None:
        """Stop the turn: its run is cancelled and the turn ends ``interrupted`` (a graph
        turn still waiting for its digest approval ends without a run)."""
        approval = digest.of(self.row)
        if self.asking and approval is not None and \
                digest.answer_of(self.harness.store, self.row) is None:
            await self.harness.answer(approval, ApprovalStatus.CANCELLED,
                                      note="turn/interrupt",
                                      via=Via(surface=self.harness.surface,
                                              standing="turn-interrupt"))
            return
        await self._run_or_end()
        if self.ended.done():  # it ended on its own: nothing left to stop
            return
        run_id = await self.run_id
        await self.harness.cancel(run_id, note="turn/interrupt")


# How an answer that ran nothing reads in the turn's last message.
WORDS = {ApprovalStatus.DECLINED: "decline", ApprovalStatus.CANCELLED: "cancel",
          ApprovalStatus.TIMED_OUT: "timed out", ApprovalStatus.ACCEPTED: "accept",
          ApprovalStatus.PENDING: "pending"}


def _action_digest(harness: Harness, approval_id: str) -> str | None:
    row = harness.store.get_approval(approval_id)
    value = row.request.get("action_digest") if row is not None else None
    return str(value) if value else None


T = TypeVar("T")


async def until(source: AsyncIterator[T], stop: asyncio.Future[Any]) -> AsyncIterator[T]:
    """``source``'s items until it ends or ``stop`` is done (then it is closed)."""
    step: asyncio.Future[T] | None = None
    try:
        while not stop.done():
            step = asyncio.ensure_future(anext(source))
            await asyncio.wait({step, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                return
            try:
                item = step.result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        if step is not None and not step.done():  # its read is dropped, not left running
            step.cancel()
            await asyncio.gather(step, return_exceptions=True)
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
