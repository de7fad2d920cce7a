"""Output that cannot interrupt a state change.

A reader that goes away (``rein submit | head -1``) closes the pipe rein writes to; the next
write raises ``BrokenPipeError``. Printing is a report of what happened, never part of it,
so a listener or a message printed while a run advances is wrapped: once the output is
gone, printing stops and the advance goes on to its next durable state.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any


class _Gone:
    """Whether an output stream of this process has been closed by its reader."""

    closed = False


def guarded(write: Callable[..., Any]) -> Callable[..., Any]:
    """``write`` that swallows the errors of a closed or broken output (and stops trying)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if _Gone.closed:
            return None
        try:
            return write(*args, **kwargs)
        except (BrokenPipeError, ConnectionResetError):
            park_stdout()
            return None
        except OSError as exc:  # EPIPE through another wrapper, or an output device error
            if exc.errno in (32, 5, 28):  # EPIPE, EIO, ENOSPC
                park_stdout()
                return None
            raise

    return call


def park_stdout() -> None:
    """Point stdout and stderr at /dev/null: the interpreter's last flush must not raise."""
    _Gone.closed = True
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            fd = stream.fileno()
        except (OSError, ValueError, AttributeError):
            continue
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        except OSError:
            pass
