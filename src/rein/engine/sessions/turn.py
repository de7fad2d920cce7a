"""One turn as it runs: its run, its feed, and the answers to its questions.

:class:`TurnRun` drives the turn's run (a graph turn first waits for its digest question,
:mod:`rein.engine.sessions.digest`), streams its feed folded from the stored events, and
answers its questions through the one approval queue, bound to the digest of what was
shown; a thread's policy answers some itself (``never``; an action accepted for the
session). :class:`rein.engine.sessions.runtime.Sessions` makes them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.ids import RunId
from rein.core.states import ApprovalStatus
from rein.engine import events
from rein.engine.answering import Via
from rein.engine.sessions import digest, fields
from rein.engine.sessions.feed import Message, ServerRequest
from rein.errors import ConfigError
from rein.store.base import ThreadRow, ThreadTurnRow

if TYPE_CHECKING:
    from rein.engine.service import Harness
    from rein.engine.sessions.runtime import Sessions

# A client's decision → the approval queue's answer. `acceptForSession` also accepts the
# same exact action (same digest) for the rest of the thread's life, in any process.
DECISIONS = {"accept": ApprovalStatus.ACCEPTED, "acceptForSession": ApprovalStatus.ACCEPTED,
             "decline": ApprovalStatus.DECLINED, "cancel": ApprovalStatus.CANCELLED}


class TurnRun:
    """One turn: its run, its feed as it happens, and the answers to its questions."""

    def __init__(self, sessions: Sessions, thread: ThreadRow, turn: ThreadTurnRow) -> None:
        self.sessions, self.thread, self.row = sessions, thread, turn
        self.turn_id = turn.turn_id
        self.feed = sessions._feed(thread, turn)
        loop = asyncio.get_running_loop()
        self.run_id: asyncio.Future[str] = loop.create_future()
        self.done = False
        self.waiting = False  # a graph turn's drive waits for its digest question's answer
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

    async def drive(self) -> None:
        """Run the turn's graph to its end or first wait (or continue it after a crash)."""
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
        prepared = await harness.prepare(path, given={})
        self.sessions._runs[str(prepared.data["id"])] = self.run_id
        try:
            # A conversation turn's graph is rein's own, written from the client's input
            # under the thread's policy: the client's turn/start is its approval.
            await harness.start(prepared, approved=shown or prepared.digest)
        except BaseException as exc:
            if not self.run_id.done():  # the run never began: the turn fails here
                self.run_id.set_exception(exc)
            raise
        finally:
            self.sessions._runs.pop(str(prepared.data["id"]), None)

    async def stream(self, *, replay: bool = True) -> AsyncIterator[Message]:
        """The turn's feed, from its start (``replay=False``: what is stored is folded
        silently and only pending questions and new events are given), to its end."""
        if self.asking:
            async for message in self._asking(replay=replay):
                yield message
            if self.done:
                return
            replay = True  # what the run records next is new to this client
        run_id = await self.run_id
        store = self.harness.store
        if self.row.run_id is None:
            store.set_turn_run(self.turn_id, run_id)
        after = 0
        if not replay:
            for event in store.events(run_id):  # type: ignore[arg-type]
                self.feed.apply(event)
                after = event.seq
            for request in list(self.feed.pending.values()):
                async for message in self._vetted(request):
                    yield message
        try:
            async for event in events.subscribe(store, run_id, after, until_ended=True):
                for message in self.feed.apply(event):
                    if isinstance(message, ServerRequest):
                        async for vetted in self._vetted(message):
                            yield vetted
                    else:
                        yield message
        finally:
            self.done = self.feed.status != "inProgress"

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
