"""What a method handler uses of its connection: the app-server's handlers
(:mod:`rein.appserver.methods`, :mod:`rein.appserver.more_methods`) are written against it,
and :class:`rein.appserver.server.Connection` provides it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rein.engine.service import Harness
    from rein.protocol.messages import Notification
    from rein.protocol.turns import TurnFeed, TurnRun


class Deferred:
    """A handler's result that is sent when ``work`` ends: the handler returns at once and
    the connection reads on meanwhile (a command that asks the client must read its
    answer). ``work`` fails as a handler does: its error is the request's answer."""

    def __init__(self, work: Awaitable[Any]) -> None:
        self.work = work


class Connection(Protocol):
    """What a handler uses of the connection (:class:`rein.appserver.server.Connection`)."""

    harness: Harness
    questions: dict[str, TurnFeed]
    loaded: dict[str, None]  # the threads this connection follows, in the order loaded
    unsubscribed: set[str]  # threads whose notifications this connection no longer gets

    def then(self, work: Callable[[], None]) -> None: ...
    def notify(self, notification: Notification) -> None: ...
    def run_turn(self, turn: TurnRun, *, replay: bool = True, drive: bool = True
                 ) -> None: ...
    def spawn(self, work: Awaitable[Any]) -> asyncio.Future[Any]: ...
    def ask(self, method: str, params: Mapping[str, Any], *, request_id: str
            ) -> asyncio.Future[Any]: ...
