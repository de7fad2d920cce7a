"""A turn's feed as it runs: its run's events as they commit, folded into messages.

:class:`TurnFeed` follows one turn (:class:`rein.engine.cases.sessions.TurnRun`, which drives it)
through the event log (:meth:`rein.engine.service.Harness.follow`, the same way every
surface follows the log) and folds each event with the turn's
:class:`~rein.protocol.feed.Feed`. A question the turn asks is passed to the client unless
the thread's standing instructions answer it (:meth:`TurnRun.standing`: ``never``, an
action accepted for the session), and the client's answer goes back to the turn bound to
the digest the question showed. A graph turn first shows its plan and asks its digest
question (the turn's own log), asked again by a server that picks the turn up after a
restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from rein.core.states import ApprovalStatus
from rein.engine.cases.sessions.replies import WORDS
from rein.engine.cases.sessions.turn import DECISIONS, TurnRun
from rein.protocol import fields
from rein.protocol.messages import Message, ServerRequest
from rein.protocol.threads import feed_of
from rein.store.base import Event

if TYPE_CHECKING:
    from rein.engine.service import Harness


class TurnFeed:
    """One turn's feed in this process: what its client is told, and its answers."""

    def __init__(self, harness: Harness, turn: TurnRun) -> None:
        self.harness, self.turn = harness, turn
        self.feed = feed_of(harness, turn.row)

    @property
    def turn_id(self) -> str:
        return self.turn.turn_id

    @property
    def thread_id(self) -> str:
        return self.turn.thread.thread_id

    def stream(self, *, replay: bool = True) -> AsyncGenerator[Message, None]:
        """The turn's feed, from its start (``replay=False``: what its run has stored when
        this is called is folded silently, and only pending questions and later events
        are given), to its end."""
        stored = None
        turn = self.turn
        if not replay and turn.run_id.done() and turn.run_id.exception() is None:
            stored = self.harness.log(turn.run_id.result())
        return self._stream(replay=replay, stored=stored)

    async def _stream(self, *, replay: bool, stored: list[Event] | None
                      ) -> AsyncGenerator[Message, None]:
        turn, feed = self.turn, self.feed
        if turn.asking:
            async for message in self._asking(replay=replay):
                yield message
            if turn.done:
                return
            replay = True  # what the run records next is new to this client
        await turn.run_or_end()
        if turn.ended.done() and turn.run_id.done() and turn.run_id.exception() is not None:
            ending = feed.apply(turn.ended.result())
            turn.done = True
            for message in ending:
                yield message
            return
        run_id = await turn.run_id
        turn.record_run(run_id)
        after = 0
        if not replay:
            for event in stored if stored is not None else self.harness.log(run_id):
                feed.apply(event)
                after = event.seq
            for request in list(feed.pending.values()):
                async for message in self._vetted(request):
                    yield message
        try:
            # Until the run ends, or the turn does (its start raised: the run is stuck).
            follow = self.harness.follow(run_id, after, until_ended=True)
            async for event in until(follow, turn.ended):
                after = event.seq
                async for message in self._told(event):
                    yield message
            if turn.ended.done():
                for event in self.harness.log(run_id, after=after):
                    async for message in self._told(event):
                        yield message
                ending = feed.apply(turn.ended.result())
                turn.done = feed.status != "inProgress"
                for message in ending:
                    yield message
        finally:
            turn.done = feed.status != "inProgress"

    async def _told(self, event: Event) -> AsyncIterator[Message]:
        """What one event of the run tells the client (its questions vetted). The turn is
        ``done`` before its ``turn/completed`` is given: a client that starts its next
        turn on hearing it must not find this one still in progress."""
        messages = self.feed.apply(event)
        if self.feed.status != "inProgress":
            self.turn.done = True
        for message in messages:
            if isinstance(message, ServerRequest):
                async for vetted in self._vetted(message):
                    yield vetted
            else:
                yield message

    async def _asking(self, *, replay: bool) -> AsyncIterator[Message]:
        """A graph turn before its run: the opening, the digest question from the queue
        (asked again after a restart), its answer; ``done`` when nothing is to run."""
        turn, feed = self.turn, self.feed
        opening = feed.opening(turn.row.created_at)
        for message in opening if replay else ():
            yield message
        approval = turn.row.input.get("digestApproval")
        source = turn.log_id
        stored = len(self.harness.log(source)) if not replay else 0
        async for event in self.harness.follow(source):
            fresh = event.seq > stored
            for message in feed.apply(event):
                if not isinstance(message, ServerRequest):
                    if fresh:
                        yield message
                # One asked before this stream began is asked again while it is open.
                elif fresh or turn.question_answer() is None:
                    asked = await self._vetted_once(message)
                    if asked is not None:
                        yield asked
            if event.type == "approval/answered" and \
                    event.payload.get("approval_id") == approval:
                break
        answered = turn.question_answer()
        if answered is not ApprovalStatus.ACCEPTED:
            assert answered is not None
            for message in feed.not_run(turn.sessions.now(), WORDS[answered]):
                yield message
            turn.done = True

    async def _vetted_once(self, request: ServerRequest) -> Message | None:
        """:meth:`_vetted` as a value: the question for the client, or None."""
        async for message in self._vetted(request):
            return message
        return None

    async def _vetted(self, request: ServerRequest) -> AsyncIterator[Message]:
        """A question the thread's standing instructions answer (the engine says which),
        or the question for the client, with a field for each value its gate takes."""
        standing = self.turn.standing(request.id)
        if standing is not None:
            decision, why = standing
            asyncio.ensure_future(self.answer(request.id, decision, standing=why))
        else:
            yield fields.with_fields(request, self.harness.find_approval(request.id))

    async def answer(self, request_id: str, decision: str, *,
                     values: Mapping[str, Any] | None = None,
                     standing: str | None = None) -> None:
        """Answer a question of this turn: bound to the digest the question showed."""
        request = self.feed.pending.get(request_id)
        shown = request.digest if request is not None else None
        await self.turn.answer(request_id, decision, digest=shown, values=values,
                               standing=standing)


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


__all__ = ["DECISIONS", "TurnFeed", "TurnRun", "until"]
