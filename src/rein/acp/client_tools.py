"""The editor's buffers and terminals as the I/O of a session's file and shell tools.

Where the client's ``initialize`` grants ``fs.readTextFile``, ``fs.writeTextFile`` or
``terminal``, an allowed call's I/O goes through ``fs/read_text_file``,
``fs/write_text_file`` and ``terminal/create`` → ``terminal/wait_for_exit`` →
``terminal/output`` → ``terminal/release``. The toolbox has decided the call before this
module sees it (:mod:`rein.tools.backend`): a denied path or command never reaches the
client. A command still runs wrapped by rein's sandbox, in the environment rein built for
it, and the workspace is still compared before and after it.

What the editor's terminal shows is the command, not the sandbox's command line (bwrap and
its dozens of options): the wrapper is written, exactly as rein built it, into a launcher
script in a fresh private directory (mode 0700, removed once the terminal is released),
and the terminal runs ``/bin/sh <launcher> <the command's argv>``; the launcher ``exec``s
the same bwrap line with the command's argv after it. Nothing of the confinement changes:
the same bwrap runs the same argv with the same environment; only a process of the same
account, which could run anything already, could touch the launcher before it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import acp
from acp import schema

from rein.core.loops import within
from rein.tools.paths import ToolFailure
from rein.tools.process import ProcessResult
from rein.tools.sandbox import split_wrapped

LAUNCHER = "rein-sandbox"  # the name the editor's terminal line shows before the command


class ClientTools:
    """One session's :class:`~rein.tools.backend.ToolBackend` over its ACP connection."""

    name = "acp-client"

    def __init__(self, conn: Any, session_id: str, capabilities: Any) -> None:
        fs = getattr(capabilities, "fs", None)
        self.conn, self.session_id = conn, session_id
        self.reads = bool(getattr(fs, "read_text_file", False))
        self.writes = bool(getattr(fs, "write_text_file", False))
        self.runs = bool(getattr(capabilities, "terminal", False))

    @property
    def used(self) -> bool:
        """Whether the client offered anything this backend does."""
        return self.reads or self.writes or self.runs

    async def read_text(self, path: Path) -> str:
        try:
            answer = await self.conn.read_text_file(session_id=self.session_id, path=str(path))
        except acp.RequestError as exc:
            raise _failure("read", path, exc) from None
        return str(answer.content)

    async def write_text(self, path: Path, text: str) -> None:
        try:
            await self.conn.write_text_file(session_id=self.session_id, path=str(path),
                                            content=text)
        except acp.RequestError as exc:
            raise _failure("write", path, exc) from None

    async def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                  timeout: float | None, max_output_bytes: int) -> ProcessResult:
        """``argv`` in one of the editor's terminals, released however it ends; shown as
        the launcher of rein's sandbox and the command (:func:`shown`)."""
        started = time.monotonic()
        line, folder = shown(argv)
        try:
            made = await self.conn.create_terminal(
                session_id=self.session_id, command=line[0], args=line[1:],
                env=[schema.EnvVariable(name=k, value=v) for k, v in env.items()],
                cwd=str(cwd), output_byte_limit=max_output_bytes)
        except acp.RequestError as exc:
            _remove(folder)
            raise ToolFailure(f"the editor could not start a terminal: {exc}",
                              code="TOOL031") from None
        except BaseException:
            _remove(folder)
            raise
        try:
            return await self._ran(str(made.terminal_id), started, timeout)
        finally:
            _remove(folder)

    async def _ran(self, terminal: str, started: float, timeout: float | None
                   ) -> ProcessResult:
        timed_out = False
        try:
            try:
                exited = await within(self.conn.wait_for_terminal_exit(
                    session_id=self.session_id, terminal_id=terminal), timeout)
            except TimeoutError:
                timed_out = True
                await self.conn.kill_terminal(session_id=self.session_id, terminal_id=terminal)
                exited = None
            except asyncio.CancelledError:  # the turn was interrupted: the command stops too
                with contextlib.suppress(acp.RequestError):
                    await self.conn.kill_terminal(session_id=self.session_id,
                                                  terminal_id=terminal)
                raise
            said = await self.conn.terminal_output(session_id=self.session_id,
                                                   terminal_id=terminal)
        except acp.RequestError as exc:
            raise ToolFailure(f"the editor's terminal failed: {exc}", code="TOOL031") from None
        finally:
            with contextlib.suppress(acp.RequestError):  # the client dropped it already
                await self.conn.release_terminal(session_id=self.session_id,
                                                 terminal_id=terminal)
        status = said.exit_status or exited
        code = getattr(status, "exit_code", None)
        if code is None:  # killed by a signal, or by the timeout
            code = -9 if timed_out or getattr(status, "signal", None) else -1
        output = str(said.output)
        return ProcessResult(exit_code=int(code), stdout=output, stderr="",
                             timed_out=timed_out, truncated=bool(said.truncated),
                             duration_seconds=time.monotonic() - started,
                             stdout_bytes=len(output.encode()))


def shown(argv: Sequence[str]) -> tuple[list[str], Path | None]:
    """The terminal line that runs ``argv`` (a command rein's sandbox wraps) and the
    private directory of its launcher (None when ``argv`` is not wrapped: it is shown as
    it is). The launcher ``exec``s the wrapper exactly as built, then the command's argv."""
    wrapper, command = split_wrapped(argv)
    if not wrapper:
        return list(argv), None
    folder = Path(tempfile.mkdtemp(prefix="rein-term-"))  # 0700, this account's only
    launcher = folder / LAUNCHER
    launcher.write_text("#!/bin/sh\n# rein's sandbox around the command given as arguments"
                        f"\nexec {shlex.join(wrapper)} \"$@\"\n", encoding="utf-8")
    return ["/bin/sh", str(launcher), *command], folder


def _remove(folder: Path | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _failure(verb: str, path: Path, exc: acp.RequestError) -> ToolFailure:
    return ToolFailure(f"the editor could not {verb} {path}: {exc}", code="TOOL031")
