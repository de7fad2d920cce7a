"""The one place the command line waits on the async Harness."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(call: Coroutine[Any, Any, T]) -> T:
    """Run one Harness call to completion on a fresh event loop: a command is one call, so
    the loop lives as long as the command does (a server keeps its own and awaits). The
    loop is rein's (:mod:`rein.core.loops`), which keeps waking inside an agent's sandbox."""
    from rein.core.loops import run

    return run(call)


__all__ = ["run_sync"]
