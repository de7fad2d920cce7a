"""The Python SDK's threads: ``harness.start_thread()``, ``thread.run()``, ``turn.stream()``.

A thin layer for programs over the session runtime (``harness.sessions``) and a turn's
feed (:class:`~rein.protocol.turns.TurnFeed`). :class:`Harness` is ``rein.Harness``: the
engine's Harness, whose threads are this module's::

    harness = rein.Harness.open(".")
    thread = harness.start_thread(sandbox="workspace-write")
    turn = await thread.run("list the files", on_approval=lambda request: "accept")
    async for message in turn.stream():
        print(message.method)
    print(turn.result().final_response)

Questions (approvals, gates) are answered by the ``on_approval`` callback, or, without one,
by the program itself: ``stream()`` yields each :class:`ServerRequest` and the program calls
``turn.answer(request.id, "accept")`` when it has decided (a queue it works through at its
own pace). ``thread.run_sync(...)`` does all of it for a script without an event loop. A
turn another process started (one waiting on a question, say) is taken up with
``await thread.pending_turn()``.

Answers are words, the same on every surface (:data:`DECISIONS`): ``accept``,
``acceptForSession``, ``decline``, ``cancel`` for a thread's questions, and ``accept``,
``decline``, ``cancel`` for ``harness.answer(approval_id, ...)`` on a graph run's queue.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from rein.core.frozen import Frozen
from rein.core.loops import run as run_loop
from rein.engine import service
from rein.protocol import threads
from rein.protocol.messages import Message, Notification, ServerRequest
from rein.protocol.turns import DECISIONS, TurnFeed

OnApproval = Callable[[ServerRequest], str | Awaitable[str]]
Input = str | Sequence[Mapping[str, Any]]


class TurnResult(Frozen):
    """How a turn ended: its status, the final answer, its items (Codex shapes), and the
    tokens its model calls used (``usage``: inputTokens, outputTokens, totalTokens, ...,
    summed over the turn, in the names ``thread/tokenUsage/updated`` gives them). ``usage``
    is None when no model call of the turn reported its tokens, and a count rein does not
    know is None: never 0 for unknown."""

    turn_id: str
    status: str  # completed | interrupted | failed
    final_response: str | None
    items: list[dict[str, Any]]
    error: str | None
    usage: dict[str, int | None] | None


class Harness(service.Harness):
    """``rein.Harness``: the engine's Harness (:class:`rein.engine.service.Harness`), whose
    threads are the SDK's :class:`Thread`."""

    def start_thread(self, *, cwd: str | None = None, profile: str | None = None,
                     sandbox: Any = None, approval_policy: Any = None,
                     name: str | None = None) -> Thread:
        """A new durable thread: ``sandbox`` a Codex sandbox mode or policy object,
        ``approval_policy`` ``on-request`` (default), ``untrusted`` or ``never``."""
        row = self.sessions.start_thread(cwd=cwd, profile=profile, sandbox=sandbox,
                                         approval_policy=approval_policy, name=name)
        return Thread(self, row.thread_id)

    def thread(self, thread_id: str) -> Thread:
        """A thread started earlier, in this process or another (THREAD404)."""
        self.sessions.thread(thread_id)
        return Thread(self, thread_id)


class Thread:
    """A durable conversation (``harness.start_thread()`` or ``harness.thread(id)``)."""

    def __init__(self, harness: service.Harness, thread_id: str) -> None:
        self._harness, self.id = harness, thread_id

    async def run(self, input: Input, *, on_approval: OnApproval | None = None,
                  sandbox: Any = None) -> Turn:
        """Start a turn with ``input`` (text, or Codex input items); consume it with
        :meth:`Turn.stream` or :meth:`Turn.wait`."""
        items = [{"type": "text", "text": input}] if isinstance(input, str) else list(input)
        turn = await self._harness.sessions.begin_turn(self.id, items, sandbox=sandbox)
        return Turn(TurnFeed(self._harness, turn), on_approval)

    def run_sync(self, input: Input, *, on_approval: OnApproval | None = None,
                 sandbox: Any = None) -> TurnResult:
        """:meth:`run` and :meth:`Turn.wait` for a script (its own event loop)."""

        async def whole() -> TurnResult:
            turn = await self.run(input, on_approval=on_approval, sandbox=sandbox)
            return await turn.wait()

        return run_loop(whole())

    async def pending_turn(self, *, on_approval: OnApproval | None = None) -> Turn | None:
        """The thread's turn in progress, started in this process or another (one waiting
        on a question, or left by a process that died), to follow, answer and wait for;
        None when no turn is in progress. Its :meth:`Turn.stream` gives the questions still
        open, then what the turn does next; :meth:`Turn.result` folds the whole turn."""
        sessions = self._harness.sessions
        running = sessions.active.get(self.id)
        if running is not None and not running.done:  # driven here already: followed
            return Turn(TurnFeed(self._harness, running), on_approval, replay=False,
                        drive=False)
        turn = sessions.reopen(self.id)
        if turn is None:
            return None
        return Turn(TurnFeed(self._harness, turn), on_approval, replay=False)

    def turns(self) -> list[dict[str, Any]]:
        """Every turn of the thread with its items, rebuilt from the store."""
        return [feed.turn() for feed in threads.feeds(self._harness, self.id)]

    def fork(self) -> Thread:
        """A new thread with this one's history; this one is untouched."""
        return Thread(self._harness, self._harness.sessions.fork(self.id).thread_id)


class Turn:
    """One turn in progress: its feed, its questions, and its result."""

    def __init__(self, feed: TurnFeed, on_approval: OnApproval | None, *,
                 replay: bool = True, drive: bool = True) -> None:
        self._feed, self._on_approval, self._replay = feed, on_approval, replay
        self.id = feed.turn_id
        self._drives = drive  # False: another Turn of this process drives it
        self._driving: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def stream(self) -> AsyncIterator[Message]:
        """Every notification and question of the turn, in order, until it completes."""
        if self._driving is None:
            self._driving = asyncio.ensure_future(self._feed.turn.drive() if self._drives
                                                  else asyncio.sleep(0))
        # Closed with this stream: a program that stops reading early (the turn left
        # waiting on its question) leaves no reader of the log behind.
        async with aclosing(self._feed.stream(replay=self._replay)) as feed:
            async for message in feed:
                yield message
                if isinstance(message, ServerRequest) and self._on_approval is not None:
                    decided = self._on_approval(message)
                    decision = await decided if inspect.isawaitable(decided) else decided
                    self._later(self.answer(message.id, str(decision)))
        await self._driving
        for task in list(self._tasks):
            await task

    async def answer(self, request_id: str, decision: str, *,
                     values: Mapping[str, Any] | None = None) -> None:
        """Answer a question with a word of :data:`DECISIONS`: accept, acceptForSession,
        decline or cancel (THREAD002 for another)."""
        await self._feed.answer(request_id, decision, values=values)

    async def steer(self, input: Input) -> None:
        """Add ``input`` to this turn while it runs; the model reads it before its next
        step (THREAD005 once the turn has ended, THREAD006 for a graph turn)."""
        items = [{"type": "text", "text": input}] if isinstance(input, str) else list(input)
        await self._feed.harness.sessions.steer(self._feed.thread_id, items,
                                                expected_turn_id=self.id)

    async def interrupt(self) -> None:
        """Stop the turn; it completes ``interrupted``."""
        await self._feed.turn.interrupt()

    async def wait(self) -> TurnResult:
        """Consume the feed and give the result (questions need ``on_approval``)."""
        async for _ in self.stream():
            pass
        return self.result()

    def result(self) -> TurnResult:
        feed = self._feed.feed
        finals = [i["text"] for i in feed.items if i.get("phase") == "final_answer"]
        turn = feed.turn()
        return TurnResult(turn_id=self.id, status=feed.status,
                          final_response=finals[-1] if finals else None,
                          items=turn["items"], error=feed.error, usage=feed.usage())

    def _later(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


__all__ = ["DECISIONS", "Harness", "Notification", "OnApproval", "ServerRequest", "Thread",
           "Turn", "TurnResult"]
