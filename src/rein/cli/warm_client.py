"""The client side of the warm server: a plain ``rein next``, ``submit`` or ``dev`` handed to a
process that has already imported what the command needs (:mod:`rein.cli.warm_server`).

A driver turn is a fresh process, and most of what it costs is the imports; a warm server
forks a child that runs the very ``main(argv)`` a cold process runs, on this process's own
standard streams, working directory, umask, environment and arguments. This module is
imported on that path before anything else, so it imports next to nothing (``_socket``
and ``_signal`` rather than ``socket`` and ``signal``, whose enum classes cost more than
the rest of the hand-off): ``python -X importtime -c "import rein.cli.warm_client"``.

:func:`hand_off` returns the command's exit code, or ``None`` to run it cold: warm turned
off (``REIN_WARM=off``), an interpreter whose imports depend on the directory (a relative
entry on ``sys.path``, as ``python -c`` has), no server, an unsafe socket folder, a server
of another user, a refusal (its code changed on disk since it started, the command is not
one it serves) or any error before the child starts. When no server answered it starts
one in the background for the next turn (detached, its output to ``/dev/null``), without
waiting for it.

The socket is ``$XDG_RUNTIME_DIR/rein/<key>.sock``, else ``<tmp>/rein-<uid>/<key>.sock``
(``<tmp>`` is ``$TMPDIR``, ``$TEMP`` or ``$TMP`` when it is a folder, else ``/tmp``); the
folder is created 0700 and used only while it is a real folder (not a link) of this user
that no one else may enter. ``<key>`` is a hash of the interpreter, ``sys.path``, its
flags, rein's version and the user, so that every install and virtual environment has a
server of its own.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stub; `signal` costs its enums
import _socket
import os
import stat
import sys

from rein.core.version import VERSION

TYPE_CHECKING = False  # `typing` costs this path more than the rest of it
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["IDLE_SECONDS", "OFF", "STATUS", "STOP", "ask", "confined", "hand_off", "in_server",
           "interpreter_key", "is_off", "safe_folder", "socket_folder", "socket_path"]

OFF = ("off", "0", "false", "no")  # REIN_WARM values that turn the warm server off
IDLE_SECONDS = 900.0  # REIN_WARM_IDLE's default: a server exits after 15 idle minutes
MAGIC = b"rein-warm/1"
STATUS, STOP = b"rein-warm-status/1", b"rein-warm-stop/1"  # requests of `rein driver warm`
FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
# Replies: a tag byte and a signed 32-bit big-endian integer.
REFUSED, STALE, CHILD, STARTED, EXITED = b"R", b"O", b"P", b"S", b"X"
WAIT_SECONDS = 5.0  # for the server to take the request (its child not yet started)
in_server = False  # set by the warm server: its children run their command themselves


def is_off(env: os._Environ[str] | dict[str, str] | None = None) -> bool:
    """Whether ``REIN_WARM`` turns the warm server off."""
    value = (os.environ if env is None else env).get("REIN_WARM", "")
    return value.strip().lower() in OFF


def interpreter_key() -> str:
    """What a server must share with its client: the interpreter, its import path and flags,
    rein's version and the user (a 64-bit FNV-1a hash, hex)."""
    text = "\0".join([sys.executable, *sys.path, VERSION, repr(sys.flags),
                      repr(sys.warnoptions), str(os.getuid())])
    value = 0xCBF29CE484222325
    for byte in text.encode("utf-8", "surrogateescape"):
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def socket_folder() -> str:
    """The folder of this user's warm-server sockets (see the module docstring)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "rein")
    base = "/tmp"
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(name, "")
        if value and os.path.isabs(value) and os.path.isdir(value):
            base = value
            break
    return os.path.join(base, f"rein-{os.getuid()}")


def socket_path(folder: str, key: str) -> str:
    return os.path.join(folder, f"{key}.sock")


def safe_folder(folder: str, *, create: bool = False) -> bool:
    """Whether ``folder`` is a real folder (not a link) of this user that no other user may
    read, write or enter; with ``create``, made so (0700) first if it is missing."""
    if create:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return False
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & 0o077)


def confined() -> bool:
    """Whether this process runs under no-new-privileges, as an agent's sandbox does (and
    as Landlock and an unprivileged seccomp filter need): its commands run cold, inside
    it, and it starts no server (one started there would carry that sandbox to callers
    outside it). True where /proc says nothing."""
    try:
        with open("/proc/self/status", "rb") as handle:
            text = handle.read()
    except OSError:
        return True
    for line in text.splitlines():
        name, _, value = line.partition(b":")
        if name == b"NoNewPrivs" and value.strip() != b"0":
            return True
    return False


def hand_off(args: Sequence[str]) -> int | None:
    """The exit code of ``rein ARGS`` run by the warm server, or ``None`` to run it cold."""
    if in_server or is_off() or sys.platform != "linux" or confined() \
            or not all(p and os.path.isabs(p) for p in sys.path):
        return None
    folder, key = socket_folder(), interpreter_key()
    if not safe_folder(folder):
        if not os.path.lexists(folder):
            start_server(folder, key)
        return None
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        return _converse(conn, folder, key, list(args))
    finally:
        conn.close()


def _converse(conn: _socket.socket, folder: str, key: str, args: list[str]) -> int | None:
    conn.settimeout(WAIT_SECONDS)
    try:
        conn.connect(socket_path(folder, key))
    except (FileNotFoundError, ConnectionRefusedError):
        start_server(folder, key)
        return None
    except OSError:
        return None
    try:
        if not _same_user(conn):
            return None
        request, fds = _request(key, args)
        try:
            _send(conn, request, fds)
        finally:
            os.close(fds[-1])  # the working directory's descriptor
        tag, pid = _reply(conn)
        if tag == STALE:
            start_server(folder, key)  # the old one is on its way out
            return None
        if tag != CHILD:
            return None
    except KeyboardInterrupt:  # before the child may start: it never will
        print("interrupted", file=sys.stderr)
        return 130
    except OSError:
        return None
    return _follow(conn, pid)


def _same_user(conn: _socket.socket) -> bool:
    """Whether the server at the other end runs as this user (SO_PEERCRED)."""
    creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(creds[4:8], sys.byteorder) == os.getuid()


def _request(key: str, args: list[str]) -> tuple[bytes, list[int]]:
    """The request's bytes and the descriptors it passes: stdin, stdout, stderr and the
    working directory. Raises OSError when one of them is missing."""
    streams = (sys.stdin, sys.stdout, sys.stderr)
    specs = []
    for number, stream in enumerate(streams):
        if stream is None:
            raise OSError("a standard stream is closed")
        os.fstat(number)
        specs.append(f"{stream.encoding}:{stream.errors}:{int(stream.line_buffering)}:"
                     f"{int(getattr(stream, 'write_through', False))}".encode())
    mask = os.umask(0o22)
    os.umask(mask)
    argv = [sys.argv[0] if sys.argv else "rein", *args]
    fields = [MAGIC, key.encode(), b"%o" % mask, *specs, b"%d" % len(argv),
              *(os.fsencode(a) for a in argv),
              *(k + b"=" + v for k, v in os.environb.items())]
    if any(b"\0" in f for f in fields):
        raise OSError("an argument holds a NUL byte")
    body = b"\0".join(fields)
    cwd = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
    return len(body).to_bytes(4, "big") + body, [0, 1, 2, cwd]


def _send(conn: _socket.socket, data: bytes, fds: list[int]) -> None:
    rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
    sent = conn.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
    if sent < len(data):
        conn.sendall(data[sent:])


def _reply(conn: _socket.socket) -> tuple[bytes, int]:
    """The next reply, ``(b"", 0)`` at the end of the stream."""
    data = b""
    while len(data) < 5:
        chunk = conn.recv(5 - len(data))
        if not chunk:
            return b"", 0
        data += chunk
    return data[:1], int.from_bytes(data[1:], "big", signed=True)


def _follow(conn: _socket.socket, pid: int) -> int | None:
    """Let the child start, forward signals to it and return its exit code."""

    def forward(number: int, _frame: object) -> None:
        try:
            os.killpg(pid, number)
        except OSError:
            try:
                os.kill(pid, number)
            except OSError:
                pass

    before = {number: _signal.signal(number, forward) for number in FORWARDED}
    started = False
    try:
        conn.sendall(b"G")  # the child waits for this: without it, it exits unseen
        conn.settimeout(None)
        while True:
            tag, value = _reply(conn)
            if tag == STARTED:
                started = True
            elif tag == EXITED:
                break
            elif not tag:  # the server went away with the child's code
                if not started:
                    return None
                _wait_gone(pid)  # the turn goes on without it: return only once it ended
                print("rein: the warm server stopped during the command, which has ended; "
                      "its exit code is lost with the server", file=sys.stderr)
                return 1
        if not started:  # the child could not set itself up: nothing ran
            return None
    except OSError:
        if not started:
            return None
        return 1
    finally:
        for number, handler in before.items():
            _signal.signal(number, handler)
    if -64 < value < 0:  # killed by a signal: so is this process, as a cold one would be
        _signal.signal(-value, _signal.SIG_DFL)
        sys.stdout.flush()
        os.kill(os.getpid(), -value)
        return 128 - value
    return value


def ask(request: bytes) -> dict[str, object] | None:
    """The answer of this interpreter's warm server to ``STATUS`` or ``STOP``, or ``None``
    when none is listening (or the one listening is another user's)."""
    import json

    folder = socket_folder()
    if sys.platform != "linux" or not safe_folder(folder):
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(WAIT_SECONDS)
        conn.connect(socket_path(folder, interpreter_key()))
        if not _same_user(conn):
            return None
        body = b"\0".join([request, interpreter_key().encode()])
        conn.sendall(len(body).to_bytes(4, "big") + body)
        data = b""
        while chunk := conn.recv(1 << 16):
            data += chunk
    except OSError:
        return None
    finally:
        conn.close()
    if len(data) < 4 or len(data) != 4 + int.from_bytes(data[:4], "big"):
        return None
    answer = json.loads(data[4:])
    return answer if isinstance(answer, dict) else None


def _wait_gone(pid: int) -> None:
    """Wait until process ``pid`` has ended (gone, or a zombie nobody reaps)."""
    import time

    while True:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in (b"Z", b"X"):
            return
        time.sleep(0.05)


BOOT = ("import sys; sys.path[:] = sys.argv[3:]; "
        "from rein.cli.warm_server import serve; serve(sys.argv[1], sys.argv[2])")


def start_server(folder: str, key: str) -> None:
    """Start a warm server in the background, detached (a new session, its standard streams
    on /dev/null, no other descriptor), without waiting for it: a double fork, so that no
    zombie is left to this process."""
    if not safe_folder(folder, create=True):
        return
    try:
        pid = os.fork()
    except OSError:
        return
    if pid:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
        return
    code = 0
    try:  # the first child: a new session, a grandchild in it, and gone
        os.setsid()
        if os.fork() == 0:
            code = 127
            null = os.open(os.devnull, os.O_RDWR)
            for number in (0, 1, 2):
                os.dup2(null, number)
            os.closerange(3, 1 << 16)
            os.chdir("/")
            import subprocess

            flags = getattr(subprocess, "_args_from_interpreter_flags")()  # noqa: B009
            os.execv(sys.executable, [sys.executable, *flags, "-c", BOOT, folder, key,
                                      *sys.path])
    except BaseException:  # noqa: BLE001, S110 - a forked child never returns to the caller
        pass
    finally:
        os._exit(code)
