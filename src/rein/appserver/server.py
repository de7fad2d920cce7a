"""The app-server connection: handshake, dispatch, turns streaming, questions answered.

A faithful subset of Codex's app-server v2 protocol (see docs/app-server.md): the client
sends ``initialize`` then ``initialized``; every other request before that is answered
"Not initialized", a second ``initialize`` "Already initialized". Requests are handled in
the order they arrive; each turn's feed is pumped to the client by a task of its own, and
the server's questions (approvals, gates) are JSON-RPC requests whose id is the approval's
id, so that the client's answer — or one given with ``rein approvals`` — resolves them.

Nothing here decides a state change: the handlers in :mod:`rein.appserver.methods` call the
session runtime (``harness.sessions``), and each turn's feed comes from the protocol layer
(:class:`rein.protocol.turns.TurnFeed`), folded from the stored events.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import IO, TYPE_CHECKING, Any

from rein.appserver import wire
from rein.appserver.handling import Deferred
from rein.appserver.wire import Incoming, MethodError, Wire
from rein.errors import ConfigError, ReinError
from rein.protocol import fields
from rein.protocol.messages import Message, Notification, ServerRequest
from rein.protocol.shapes import CODEX_VERSION
from rein.protocol.turns import TurnFeed

if TYPE_CHECKING:
    from rein.engine.service import Harness
    from rein.protocol.turns import TurnRun

class Connection:
    """One client over one pair of streams."""

    def __init__(self, harness: Harness, transport: Wire) -> None:
        self.harness, self.wire = harness, transport
        self.initialized = False
        self.opted_out: frozenset[str] = frozenset()
        self.experimental = False
        self.questions: dict[str, TurnFeed] = {}  # server request id → the turn asking
        self.loaded: dict[str, None] = {}  # threads this connection follows, in order
        self.unsubscribed: set[str] = set()  # thread/unsubscribe: told nothing more
        self.tasks: set[asyncio.Future[Any]] = set()
        self.pumps: set[asyncio.Future[Any]] = set()
        self.drives: dict[asyncio.Future[Any], TurnRun] = {}
        self._after: Callable[[], None] | None = None
        self.asked: dict[str, asyncio.Future[Any]] = {}  # a handler's questions (ask)
        self.deferred: set[asyncio.Future[Any]] = set()  # requests answered when done

    # -- the loop ------------------------------------------------------------------------

    async def serve(self) -> None:
        """Handle messages until the client closes its end, then let turns reach a pause."""
        from rein.appserver.methods import METHODS

        self.wire.start_reading(asyncio.get_running_loop())
        while True:
            incoming = await self.wire.queue.get()
            if incoming is None:
                break
            if incoming.method is None:
                self._answered(incoming)
            elif incoming.id is None:
                self._notified(incoming)
            else:
                await self._request(incoming, METHODS)
        # The client is gone: turns run on to their end or their next question, recorded,
        # so that a client that comes back resumes them (thread/resume). Nobody reads the
        # feeds any more, so their pumps stop.
        self.wire.closed = True
        for answer in self.asked.values():  # nobody will answer: a handler's question fails
            if not answer.done():
                answer.set_result(None)
        for work in list(self.deferred):  # nobody will read their answers (a command stops)
            work.cancel()
        for pump in list(self.pumps):
            pump.cancel()
        for drive, turn in list(self.drives.items()):
            if turn.waiting:  # a digest question waits in the store; resume asks it again
                drive.cancel()
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    async def _request(self, incoming: Incoming, methods: Mapping[str, Any]) -> None:
        method = incoming.method
        assert method is not None
        self._after = None  # only the work of a request that succeeds follows its result
        try:
            if method == "initialize":
                result = self._initialize(incoming.params)
            elif not self.initialized:
                raise MethodError(wire.INVALID_REQUEST, "Not initialized")
            elif method not in methods:
                self.wire.error(incoming.id, wire.METHOD_NOT_FOUND,
                                f"method not implemented by rein app-server: {method}",
                                {"code": "THREAD009", "hint": "docs/app-server.md lists "
                                 "the methods rein answers"})
                return
            else:
                result = await methods[method](self, incoming.params)
        except Exception as exc:  # noqa: BLE001 - one bad request never stops the server
            self._failed(incoming.id, method, exc)
        else:
            if isinstance(result, Deferred):  # answered when its work ends; reading goes on
                task = self.spawn(self._deferred(incoming.id, method, result))
                self.deferred.add(task)
                task.add_done_callback(self.deferred.discard)
                return
            self.wire.send({"id": incoming.id, "result": result})
            after = getattr(self, "_after", None)
            if after is not None:
                self._after = None
                after()

    async def _deferred(self, request_id: Any, method: str, result: Deferred) -> None:
        try:
            answer = await result.work
        except Exception as exc:  # noqa: BLE001 - answered as any handler's failure
            self._failed(request_id, method, exc)
        else:
            self.wire.send({"id": request_id, "result": answer})

    def _failed(self, request_id: Any, method: str, exc: Exception) -> None:
        """Answer a request whose handler failed with ``exc``."""
        if isinstance(exc, MethodError):
            self.wire.error(request_id, exc.code, exc.message)
        elif isinstance(exc, ConfigError):
            self.wire.error(request_id, wire.INVALID_PARAMS, f"{exc.message}",
                            {"code": exc.code, "hint": exc.hint})
        elif isinstance(exc, ReinError):
            self.wire.error(request_id, wire.INVALID_REQUEST, f"{exc.message}",
                            {"code": exc.code, "hint": exc.hint})
        else:
            print(f"rein app-server: {method}: {type(exc).__name__}: {exc}", file=sys.stderr)
            self.wire.error(request_id, wire.INTERNAL_ERROR, f"internal error in {method}")

    def ask(self, method: str, params: Mapping[str, Any], *, request_id: str
            ) -> asyncio.Future[Any]:
        """Send the client a question of a handler's own (not a turn's), with JSON-RPC id
        ``request_id`` (an approval's id); the future is its result, or None for an error
        answer or a client that left."""
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.wire.closed:
            answer.set_result(None)
            return answer
        self.asked[request_id] = answer
        self.wire.send({"id": request_id, "method": method, "params": dict(params)})
        return answer

    def then(self, work: Callable[[], None]) -> None:
        """Run ``work`` right after the current request's response is written (a handler's
        notifications come after its result, as Codex sends them)."""
        self._after = work

    def _initialize(self, params: Mapping[str, Any]) -> dict[str, Any]:
        from rein.core.version import VERSION

        if self.initialized:
            raise MethodError(wire.INVALID_REQUEST, "Already initialized")
        caps = params.get("capabilities") if isinstance(params.get("capabilities"),
                                                        Mapping) else {}
        assert isinstance(caps, Mapping)
        opted = caps.get("optOutNotificationMethods") or []
        self.opted_out = frozenset(m for m in opted if isinstance(m, str))
        self.experimental = bool(caps.get("experimentalApi"))
        self.initialized = True
        return {"userAgent": f"rein/{VERSION}",
                "serverInfo": {"name": "rein", "version": CODEX_VERSION},
                "codexHome": str(self.harness.workspace / ".rein"),
                "platformFamily": "windows" if sys.platform == "win32" else "unix",
                "platformOs": {"darwin": "macos", "win32": "windows"}.get(sys.platform,
                                                                           "linux")}

    def _notified(self, incoming: Incoming) -> None:
        # `initialized` is the one client notification; others are ignored, as Codex does.
        return None

    def _answered(self, incoming: Incoming) -> None:
        request_id = str(incoming.id)
        asked = self.asked.pop(request_id, None)
        if asked is not None:
            if not asked.done():
                result = incoming.message.get("result")
                asked.set_result(result if "error" not in incoming.message else None)
            return
        turn = self.questions.pop(request_id, None)
        if turn is None:
            return  # unknown or already answered: nothing to do, nothing to crash
        result = incoming.message.get("result")
        result = result if isinstance(result, Mapping) else None
        decision = decision_of(result, "error" in incoming.message, request_id)
        if decision is None:
            self.questions[request_id] = turn  # still open: answerable again (or by CLI)
            return
        answers = (result or {}).get("answers")
        values = fields.values_of(answers) if isinstance(answers, Mapping) else {}
        self.spawn(self._answer(turn, request_id, decision, values))

    async def _answer(self, turn: TurnFeed, request_id: str, decision: str,
                      values: Mapping[str, Any]) -> None:
        try:
            await turn.answer(request_id, decision, values=values or None)
        except ReinError as exc:
            self.notify(Notification(method="warning", params={
                "threadId": turn.thread_id, "message": f"{exc.code}: {exc.message}"}))

    # -- turns ---------------------------------------------------------------------------

    def run_turn(self, turn: TurnRun, *, replay: bool = True, drive: bool = True) -> None:
        """Drive ``turn`` (unless only following it) and pump its feed to the client."""
        if drive:
            driving = self.spawn(self._drive(turn))
            self.drives[driving] = turn
            driving.add_done_callback(lambda done: self.drives.pop(done, None))
        # The feed is asked for now: what is stored before this request's work (an
        # interrupt) runs is what a client that only follows has seen already.
        feed = TurnFeed(self.harness, turn)
        pump = self.spawn(self._pump(feed, feed.stream(replay=replay)))
        self.pumps.add(pump)
        pump.add_done_callback(self.pumps.discard)

    async def _drive(self, turn: TurnRun) -> None:
        try:
            await turn.drive()
        except ReinError as exc:  # its run goes on or waits (a refused resume): said here
            self.notify(Notification(method="error", params={
                "threadId": turn.thread.thread_id, "turnId": turn.turn_id, "willRetry": False,
                "error": {"message": f"{exc.code}: {exc.message}"}}))

    async def _pump(self, turn: TurnFeed, feed: AsyncIterator[Message]) -> None:
        try:
            async for message in feed:
                if isinstance(message, ServerRequest):
                    self.questions[message.id] = turn
                    self.wire.send(message.to_json())
                else:
                    if message.method == "serverRequest/resolved":
                        self.questions.pop(str(message.params.get("requestId")), None)
                    self.notify(message)
        except ReinError as exc:  # the feed cannot be read: said; the turn's record holds
            self.notify(Notification(method="error", params={
                "threadId": turn.thread_id, "turnId": turn.turn_id, "willRetry": False,
                "error": {"message": f"{exc.code}: {exc.message}"}}))

    def notify(self, notification: Notification) -> None:
        if notification.params.get("threadId") in self.unsubscribed:
            return
        if notification.method not in self.opted_out:
            self.wire.send(notification.to_json())

    def spawn(self, work: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Future[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            print(f"rein app-server: {type(exc).__name__}: {exc}", file=sys.stderr)


def decision_of(result: Mapping[str, Any] | None, failed: bool,
                request_id: str | None = None) -> str | None:
    """The decision a client's response carries, whichever question it answers (for a
    question with several parts, the answer to the one whose id is ``request_id``)."""
    if failed or result is None:
        return None
    decision = result.get("decision")
    if isinstance(decision, str):
        return decision
    if isinstance(decision, Mapping):  # an amendment variant: accepted as asked, no more
        return "accept"
    if "permissions" in result:  # a granted subset: anything granted accepts this call
        granted = result.get("permissions")
        return "accept" if isinstance(granted, Mapping) and any(granted.values()) \
            else "decline"
    answers = result.get("answers")
    if isinstance(answers, Mapping):
        first = [answers[request_id]] if request_id in answers else []
        rest = [a for k, a in answers.items() if not str(k).startswith(fields.PREFIX)]
        for answer in [*first, *rest]:
            picked = answer.get("answers") if isinstance(answer, Mapping) else None
            if isinstance(picked, list) and picked:
                word = str(picked[0])
                return word if word in ("accept", "decline", "cancel") else "decline"
        return "decline"
    return None


async def serve(harness: Harness, reader: IO[bytes], writer: IO[bytes]) -> None:
    """Serve one client over ``reader`` / ``writer`` until it closes its end."""
    await Connection(harness, Wire(reader, writer)).serve()
