"""Running a child process that cannot outlive its welcome.

Used by ``command`` criteria, the shell tool and the command worker. The child starts in a
new session, so it leads its own process group; whatever it spawns joins that group. When
the deadline passes, or the awaiting task is cancelled, the whole group gets SIGTERM, a
short grace, then SIGKILL: no grandchild survives (``sh -c 'sleep 60 & sleep 60'`` included).
When the child exits normally, anything it left running in its group is killed as well, so
a check never leaves a daemon behind and never hangs on a pipe a grandchild holds open.

Both pipes are read concurrently while the child runs (no deadlock on a full pipe), and each
keeps at most ``max_output_bytes``: the first quarter and the last three quarters, with a
marker saying how much was dropped in between. The rest is read and discarded, so a chatty
child never blocks.

POSIX only: process groups and signals are what make the guarantee.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol

from rein.core.frozen import Frozen
from rein.core.loops import within

DEFAULT_GRACE_SECONDS = 2.0
# Once the child is gone and its group killed, the pipes close at once; this bounds the wait
# for a process that escaped the group (setsid) and still holds a pipe.
_DRAIN_SECONDS = 2.0
# How long to wait for a SIGKILLed group to be gone (it dies as soon as it is scheduled).
_CONFIRM_SECONDS = 5.0


class ProcessResult(Frozen):
    """What a finished (or killed) child did.

    ``exit_code`` is the child's exit status; a child killed by a signal reports ``-signum``
    (as :mod:`subprocess` does). ``truncated`` is true when either stream went over the limit.
    """

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    duration_seconds: float = 0.0
    stdout_bytes: int = 0  # how many bytes the child wrote, kept or not
    stderr_bytes: int = 0


class GroupWatch(Protocol):
    """Told when a process group starts and once it is gone (the engine records groups so
    that a resumed run can kill one that outlived a killed rein)."""

    def started(self, pgid: int) -> None: ...

    def ended(self, pgid: int) -> None: ...


# Set by whoever runs work that may be interrupted (the engine, per run); unset: no one asks.
GROUP_WATCH: ContextVar[GroupWatch | None] = ContextVar("rein_group_watch", default=None)


class ProcessSandbox(Protocol):
    """Turns a command into its confined form (e.g. wrapped by bubblewrap or a container)."""

    def prepare(
        self, argv: list[str], *, cwd: Path, env: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]]: ...


class _Capture:
    """Bounded capture of one stream: head and tail kept, the middle counted."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.head_limit = self.limit // 4
        self.tail_limit = self.limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        if not self.truncated:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
        dropped = self.total - len(self.head) - len(self.tail)
        head = bytes(self.head).decode("utf-8", errors="replace")
        tail = bytes(self.tail).decode("utf-8", errors="replace")
        return f"{head}\n… [{dropped} bytes omitted] …\n{tail}"


class _Protocol(asyncio.SubprocessProtocol):
    """Feeds both pipes straight into their captures and reports exit and end of output.

    asyncio's own ``Process.wait()`` returns only once the pipes close too, so a grandchild
    holding stdout open would hide the child's exit; this protocol tells them apart.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, out: _Capture, err: _Capture) -> None:
        self.captures = {1: out, 2: err}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.drained: asyncio.Future[None] = loop.create_future()
        self.open_pipes = {1, 2}

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        chunk = data.encode() if isinstance(data, str) else data
        self.captures[fd].feed(chunk)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.open_pipes.discard(fd)
        if not self.open_pipes and not self.drained.done():
            self.drained.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_has_live_members(pgid: int) -> bool:
    """Whether any process of the group still runs (zombies, already dead, do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True  # cannot tell zombies apart here; the caller's wait is bounded
    for stat in proc.glob("[0-9]*/stat"):
        try:
            data = stat.read_text()
        except OSError:
            continue  # exited while we looked
        fields = data[data.rindex(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


async def _confirm_gone(pgid: int) -> None:
    """Wait (briefly, bounded) until the signalled group has actually died.

    A signal is only queued when ``killpg`` returns; confirming means that when
    :func:`run_process` returns, nothing of the group is still running.
    """
    deadline = time.monotonic() + _CONFIRM_SECONDS
    delay = 0.001
    while _group_has_live_members(pgid) and time.monotonic() < deadline:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


async def _stop_group(pgid: int, exited: asyncio.Future[None], grace: float) -> None:
    """SIGTERM the group, give the leader ``grace`` seconds, then SIGKILL whatever is left."""
    _signal_group(pgid, signal.SIGTERM)
    with contextlib.suppress(asyncio.TimeoutError):
        await within(asyncio.shield(exited), grace)
    _signal_group(pgid, signal.SIGKILL)
    await exited
    await _confirm_gone(pgid)


def _argv(argv_or_shell: str | Sequence[str]) -> list[str]:
    if isinstance(argv_or_shell, str):
        return ["/bin/sh", "-c", argv_or_shell]
    argv = [str(a) for a in argv_or_shell]
    if not argv:
        raise ValueError("run_process needs a command: the argument list is empty")
    return argv


# Runs in the child before the command: wait for rein's go on stdin, then run the command
# with stdin from /dev/null. EOF (rein died before recording the group) means: do nothing.
_GATE_SCRIPT = 'IFS= read -r _ || exit 125; exec "$@" </dev/null'
# The same gate for a child that is handed ``stdin_data``: what follows the go line on the pipe is
# the command's stdin (sh reads a pipe one byte at a time, so ``read`` takes only its line).
_GATE_INPUT_SCRIPT = 'IFS= read -r _ || exit 125; exec "$@"'


def _require_program(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
    """Raise as starting the program directly would, before the gate hides it behind sh
    (a relative path is the child's: from ``cwd``)."""
    program = argv[0]
    if "/" in program:
        path = os.path.join(cwd, program)  # an absolute program stays itself
        found = os.path.isfile(path) and os.access(path, os.X_OK)
    else:
        found = shutil.which(program, path=env.get("PATH", os.defpath)) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, f"no such program: {program}", program)


async def run_process(
    argv_or_shell: str | Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None,
    max_output_bytes: int = 1_000_000,
    sandbox: Any = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    stdin_data: bytes | None = None,
) -> ProcessResult:
    """Run a command (a shell string through ``/bin/sh -c``, or an argument list).

    ``env`` is the child's whole environment: nothing is inherited implicitly. ``timeout``
    ``None`` waits forever. ``sandbox``, when given, is a :class:`ProcessSandbox` that
    rewrites the command and environment before the start. Raises :class:`OSError` when the
    program cannot be started at all (e.g. ``FileNotFoundError`` for an argument list whose
    program does not exist); a shell string reports that as exit code 127 instead. ``stdin_data``,
    when given, is written to the child's stdin (without blocking the loop), then closed;
    without it the child's stdin is ``/dev/null``.
    """
    argv = _argv(argv_or_shell)
    child_env = dict(env)
    if sandbox is not None:
        argv, child_env = sandbox.prepare(argv, cwd=cwd, env=child_env)
    watch = GROUP_WATCH.get()
    gate: tuple[int, int] | None = None
    stdin: int = asyncio.subprocess.DEVNULL if stdin_data is None else asyncio.subprocess.PIPE
    if watch is not None:
        # The group must be on record before the command runs: a rein killed in between
        # would otherwise leave a group nobody knows about. The child waits on a pipe that
        # rein writes to once the group is recorded; if rein dies first, the pipe closes
        # and the child exits without running anything.
        _require_program(argv, child_env, cwd)
        gate = os.pipe()
        stdin = gate[0]
        script = _GATE_SCRIPT if stdin_data is None else _GATE_INPUT_SCRIPT
        argv = ["/bin/sh", "-c", script, "rein-gate", *argv]
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    out, err = _Capture(max_output_bytes), _Capture(max_output_bytes)
    spawn = asyncio.ensure_future(
        loop.subprocess_exec(
            lambda: _Protocol(loop, out, err),
            *argv,
            cwd=str(cwd),
            env=child_env,
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    )
    try:
        try:
            transport, protocol = await asyncio.shield(spawn)
        finally:
            if gate is not None:
                os.close(gate[0])  # the child has its copy (or never started)
    except asyncio.CancelledError:
        if gate is not None:
            os.close(gate[1])  # the gate never opens: a started child exits unrun
        # Cancelled while the pipes were being connected: the child may already be running
        # (asyncio alone would kill only the leader, then wait on pipes a grandchild holds).
        try:
            transport, protocol = await spawn
        except OSError:
            raise asyncio.CancelledError() from None  # nothing started, nothing to stop
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await _stop_group(transport.get_pid(), protocol.exited, grace_seconds)
        transport.close()
        raise
    except BaseException:
        if gate is not None:
            os.close(gate[1])
        raise
    pgid = transport.get_pid()  # the child leads its own group: pgid == pid
    feed: tuple[int, bytes] | None = None
    if watch is not None and gate is not None:
        try:
            watch.started(pgid)
        except BaseException:
            # Not on record: the gate closes unopened, the child exits unrun; let it go.
            os.close(gate[1])
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await asyncio.shield(_stop_group(pgid, protocol.exited, grace_seconds))
            transport.close()
            raise
        if stdin_data is None:
            with contextlib.suppress(OSError):  # a child already gone is no error here
                os.write(gate[1], b"go\n")
            os.close(gate[1])
        else:
            feed = (gate[1], b"go\n" + stdin_data)  # fed below, where a cancel stops the group
    elif stdin_data is not None:
        stdin_pipe = transport.get_pipe_transport(0)
        if stdin_pipe is not None:
            with contextlib.suppress(OSError):
                stdin_pipe.write(stdin_data)  # type: ignore[attr-defined]
            stdin_pipe.close()  # flushes what is buffered, then closes: EOF for the child
    timed_out = False
    finished = False
    try:
        if feed is not None:
            await _feed_pipe(loop, *feed)
        try:
            await within(asyncio.shield(protocol.exited), timeout)
        except TimeoutError:
            timed_out = True
            await _stop_group(pgid, protocol.exited, grace_seconds)
        else:
            # The leader is done; anything it left in its group goes too.
            _signal_group(pgid, signal.SIGKILL)
            await _confirm_gone(pgid)
        await _drain(protocol.drained)
        finished = True
    finally:
        if not finished:
            # Cancelled (or failed) while waiting: stop the group before letting go.
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await asyncio.shield(_stop_group(pgid, protocol.exited, grace_seconds))
            _signal_group(pgid, signal.SIGKILL)
        transport.close()
        if watch is not None and finished:
            watch.ended(pgid)  # confirmed gone; a cancelled run's group stays on record
    code = transport.get_returncode()
    return ProcessResult(
        exit_code=code if code is not None else -signal.SIGKILL,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
        duration_seconds=time.monotonic() - started,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
    )


async def _feed_pipe(loop: asyncio.AbstractEventLoop, fd: int, data: bytes) -> None:
    """Write ``data`` to the pipe ``fd`` through the loop (a child slower to read than a
    pipe's buffer never blocks rein), then close it once flushed."""
    pipe = os.fdopen(fd, "wb", buffering=0)
    try:
        writer, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, pipe)
    except OSError:
        pipe.close()
        return
    with contextlib.suppress(OSError):
        writer.write(data)
    writer.close()


async def _drain(drained: asyncio.Future[None]) -> None:
    """Wait for end of output; give up on a pipe held by a process that left the group."""
    with contextlib.suppress(asyncio.TimeoutError):
        await within(asyncio.shield(drained), _DRAIN_SECONDS)
