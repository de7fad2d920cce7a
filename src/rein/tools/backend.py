"""Where a turn's file and shell tools do their I/O, and which MCP servers its session adds.

The toolbox decides every call first (plan, permission check, sandbox); only then does the
I/O happen, by default on the local file system and through rein's process runner. A surface
whose client owns the files and terminals (an editor speaking ACP) binds a
:class:`SessionBinding` for the turns it drives, and the model worker hands it to the
toolbox: reads and writes then go to the editor's buffers, and commands, still wrapped by
rein's sandbox, run in the editor's terminals. A denied call never reaches a backend, since
the check happens before the toolbox looks at one.

The binding is a context variable: a surface sets it in the task that drives a turn, and the
tasks the engine starts for that turn (the attempt, the answer to its approvals) inherit it,
so one session's editor never sees another session's calls.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rein.core.frozen import Frozen

if TYPE_CHECKING:
    from rein.tools.process import ProcessResult


class ToolBackend(Protocol):
    """The I/O of the file and shell tools, after the toolbox allowed the call.

    ``reads``, ``writes`` and ``runs`` say which of the three this backend does; the toolbox
    does the others locally."""

    name: str
    reads: bool
    writes: bool
    runs: bool

    async def read_text(self, path: Path) -> str:
        """The text of ``path`` (as the client holds it: an unsaved buffer included)."""
        ...

    async def write_text(self, path: Path, text: str) -> None:
        """Replace the content of ``path`` by ``text`` (creating the file)."""
        ...

    async def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                  timeout: float | None, max_output_bytes: int) -> ProcessResult:
        """Run ``argv`` (already wrapped by the sandbox) to its end or ``timeout``."""
        ...


class SessionBinding(Frozen):
    """What a surface's session adds to the turns it drives."""

    backend: ToolBackend | None = None
    mcp: Any = None  # a running rein.tools.mcp.McpHub: the client's MCP servers


_BOUND: ContextVar[SessionBinding | None] = ContextVar("rein_session_binding", default=None)


def current() -> SessionBinding | None:
    """The binding of the turn this task runs, if a surface set one."""
    return _BOUND.get()


@contextlib.contextmanager
def bound(binding: SessionBinding | None) -> Iterator[None]:
    """Bind ``binding`` for this task and the tasks it starts, until the block ends."""
    token = _BOUND.set(binding)
    try:
        yield
    finally:
        _BOUND.reset(token)
