"""The event loops rein runs: asyncio's, made to keep working inside an agent's sandbox.

asyncio wakes a sleeping loop from another thread (a child process that exited, a task
handed to a thread) by sending one byte on a socket pair. The Codex CLI's Linux sandbox,
which rein's driver commands run inside, denies sending on any socket (its seccomp filter
answers ``sendto`` with EPERM), and asyncio swallows that error: the wake-up is lost, and a
loop asleep with nothing else to watch sleeps for ever. A ``rein submit`` hung so after its
criterion's process had exited, whenever the exit was noticed after the loop went to
sleep. The loops made here write the wake-up byte with ``write(2)``, which such filters
allow, on the same socket.

Every loop rein starts comes from :func:`new_loop`, and every top-level wait goes through
:func:`run` (or ``asyncio.Runner(loop_factory=new_loop)``). Every wait with a time limit
goes through :func:`within`: Python 3.11's ``asyncio.wait_for`` loses a cancel that comes
as the awaited thing completes (it returns the result instead of raising), so an
interrupted run could go on as if nothing had happened.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class SandboxedLoop(asyncio.SelectorEventLoop):
    """A selector loop whose cross-thread wake-up does not depend on ``send``."""

    def _write_to_self(self) -> None:
        sock = getattr(self, "_csock", None)  # the write end of the loop's own socket pair
        if sock is None:
            return
        try:
            os.write(sock.fileno(), b"\0")
        except OSError:
            pass  # the pair's buffer is full: the loop has a wake-up waiting already


def new_loop() -> asyncio.AbstractEventLoop:
    """A new event loop, as every part of rein makes them."""
    return SandboxedLoop()


def run(call: Coroutine[Any, Any, T]) -> T:
    """Run ``call`` to completion on a fresh loop (``asyncio.run`` with rein's loop).

    The result is handed back past the task, not as its result: as ``asyncio.Runner.run``
    ends it asks ``signal.getsignal(SIGINT)``, which builds the ``repr`` of its handler, and
    that holds the main task, whose ``repr`` holds its result. A prepared graph of 100,000
    nodes would be written out in full, once per call, to be thrown away."""
    kept: list[T] = []

    async def main() -> None:
        kept.append(await call)

    with asyncio.Runner(loop_factory=new_loop) as runner:
        runner.run(main())
    return kept[0]


async def within(awaited: Awaitable[T], seconds: float | None) -> T:
    """``await awaited``, or TimeoutError past ``seconds`` (None: no limit), as
    ``asyncio.wait_for`` but never losing a cancel: a task cancelled as ``awaited``
    completes raises CancelledError, where 3.11's ``wait_for`` returns the result."""
    async with asyncio.timeout(seconds):
        return await awaited


__all__ = ["SandboxedLoop", "new_loop", "run", "within"]
