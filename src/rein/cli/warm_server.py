"""The warm server: a process that has imported what the plain ``rein next``, ``rein
submit`` and ``rein dev`` import, and forks a child per command that runs the very
``main(argv)`` a cold process runs (the client is :mod:`rein.cli.warm_client`, which
starts it).

One thread, no event loop, no store open: it imports :data:`PRELOAD` (modules, not a
command), then accepts requests one at a time. For each it checks that the caller is this
user (``SO_PEERCRED``; anyone else is closed on), that its interpreter key matches, and
that no module file it loaded has changed on disk since (their sizes and modification
times); changed code is refused, so that the caller runs cold, and the server stops. Then
it forks: the child takes the caller's standard streams (received as descriptors), its
working directory, umask, environment and arguments, rebuilds ``sys.stdin``/``stdout``/
``stderr`` as the caller's interpreter had them, resets the signal handlers, waits for the
caller's go-ahead and runs the command; the server reaps it and sends its exit code.

It stops after ``REIN_WARM_IDLE`` seconds (default 900) with no command, on SIGTERM or
SIGINT (after its running commands end), or when its code is stale. Its pid is in
``<key>.pid`` beside the socket. ``REIN_WARM=off`` in its environment stops it from
starting at all.

State a module computes at import is shared by every command the server runs, so the
modules of :data:`PRELOAD` read no environment, working directory or home folder at
import (``tests/cli/test_warm.py`` checks the module-level code); their caches
(``functools.lru_cache``) are empty in the server, which runs nothing, so each child
fills its own.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import importlib
import io
import json
import locale
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback
from types import FrameType

from rein.cli import warm_client
from rein.cli.warm_client import (
    CHILD,
    EXITED,
    IDLE_SECONDS,
    MAGIC,
    REFUSED,
    STALE,
    STARTED,
    STATUS,
    STOP,
    interpreter_key,
    is_off,
    safe_folder,
    socket_path,
)

__all__ = ["PRELOAD", "preload", "serve"]

# What the plain `rein next`, `rein submit` and `rein dev` import in a workspace with no
# rein.toml, beyond rein.cli (their parents and the libraries they import come with them);
# tests/cli/test_warm.py checks that nothing a cold turn imports is missing.
PRELOAD = (
    "rein.cli",
    "rein.cli.echo", "rein.cli.live", "rein.cli.live_state", "rein.cli.output", "rein.cli.plain",
    "rein.cli.quick", "rein.cli.quick_dev", "rein.cli.quick_submit", "rein.cli.safe_output",
    "rein.cli.submit_turn", "rein.dev.briefs", "rein.dev.flow", "rein.dev.paths",
    "rein.dev.render", "rein.dev.settings", "rein.dev.stops",
    "rein.cli.sync", "rein.config.approver", "rein.config.files", "rein.config.hooks",
    "rein.core.failures", "rein.core.hashing", "rein.core.ids", "rein.core.reading",
    "rein.core.states", "rein.core.tiers", "rein.core.time", "rein.core.usage",
    "rein.engine.approvals", "rein.engine.attempt_session", "rein.engine.budget",
    "rein.engine.clock", "rein.engine.criteria.base", "rein.engine.criteria.command",
    "rein.engine.criteria.evaluate", "rein.engine.criteria.evidence",
    "rein.engine.criteria.external", "rein.engine.criteria.files",
    "rein.engine.criteria.human", "rein.engine.criteria.judge",
    "rein.engine.criteria.matching", "rein.engine.criteria.model", "rein.engine.driver_turns",
    "rein.engine.evaluation", "rein.engine.events", "rein.engine.execution",
    "rein.engine.executors", "rein.engine.expressions", "rein.engine.finalize",
    "rein.engine.graph", "rein.engine.graph_cache", "rein.engine.kinds.attempt",
    "rein.engine.kinds.criteria_context", "rein.engine.kinds.fragments",
    "rein.engine.kinds.gate", "rein.engine.kinds.ladder", "rein.engine.kinds.loop",
    "rein.engine.kinds.map", "rein.engine.kinds.retry", "rein.engine.kinds.subgraph",
    "rein.engine.kinds.task", "rein.engine.kinds.worker_call", "rein.engine.node_steps",
    "rein.engine.nodes", "rein.engine.outcome", "rein.engine.outputs", "rein.engine.params",
    "rein.engine.permissions", "rein.engine.prepare", "rein.engine.protocol_view",
    "rein.engine.queries", "rein.engine.record", "rein.engine.recovery",
    "rein.engine.routing", "rein.engine.runner", "rein.engine.runtime",
    "rein.engine.scheduler", "rein.engine.service", "rein.engine.signals",
    "rein.engine.transitions", "rein.engine.workers_setup", "rein.formats.ags.plan",
    "rein.formats.ags.plan_model", "rein.formats.ags.plan_notices",
    "rein.formats.ags.plan_order", "rein.formats.ags.spec", "rein.formats.agx.errors",
    "rein.formats.agx.evaluate", "rein.formats.agx.extract", "rein.formats.agx.functions",
    "rein.formats.agx.lexer", "rein.formats.agx.parser", "rein.formats.agx.scope",
    "rein.formats.agx.static", "rein.formats.agx.template", "rein.formats.agx.tree",
    "rein.formats.agx.values", "rein.formats.canonical", "rein.formats.frozen",
    "rein.formats.globs", "rein.formats.loader", "rein.formats.numbers",
    "rein.formats.pointers", "rein.formats.redaction", "rein.formats.shapes",
    "rein.profiles.policy", "rein.store.base", "rein.store.lazy_json", "rein.store.lineage",
    "rein.store.open", "rein.store.sql", "rein.store.sqlite", "rein.store.sqlite_checkpoint",
    "rein.store.sqlite_errors", "rein.telemetry.live", "rein.telemetry.otel",
    "rein.telemetry.spans", "rein.tools.catalog", "rein.tools.gitguard", "rein.tools.paths",
    "rein.tools.permissions", "rein.tools.process", "rein.tools.sandbox", "rein.tools.shell",
    "rein.core.shellsplit", "rein.tools.writeguard", "rein.workers.base",
    "rein.workers.driver", "rein.workers.driver_accept", "rein.workers.driver_current",
    "rein.workers.driver_fs", "rein.workers.driver_protocol", "rein.workers.driver_render",
    "rein.workers.driver_status", "rein.workers.driver_store", "rein.workers.model_setup",
)

LOCK_WAIT_SECONDS = 3.0  # for a server that is stopping to let go of the socket
REQUEST_LIMIT = 1 << 24  # bytes: arguments and environment
GO_SECONDS = 10.0  # a child waits this long for its caller's go-ahead


def preload() -> None:
    """Import :data:`PRELOAD`. One that fails is left alone: the child imports it again and
    reports the failure as a cold process would."""
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S110 - the child meets it again and says why
            pass


def loaded_files() -> dict[str, tuple[int, int]]:
    """The modification time (ns) and size of every module file this process has loaded."""
    found: dict[str, tuple[int, int]] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            try:
                st = os.stat(path)
            except OSError:
                continue
            found[path] = (st.st_mtime_ns, st.st_size)
    return found


def stale(files: dict[str, tuple[int, int]]) -> bool:
    """Whether one of ``files`` is gone or has changed since :func:`loaded_files`."""
    for path, seen in files.items():
        try:
            st = os.stat(path)
        except OSError:
            return True
        if (st.st_mtime_ns, st.st_size) != seen:
            return True
    return False


def idle_seconds() -> float:
    """``REIN_WARM_IDLE`` (seconds without a command before the server exits), or 900."""
    try:
        value = float(os.environ.get("REIN_WARM_IDLE", ""))
    except ValueError:
        return IDLE_SECONDS
    return value if value >= 0 else IDLE_SECONDS


def serve(folder: str, key: str) -> None:
    """Serve the plain ``rein next``/``submit``/``dev`` of callers of interpreter ``key`` on
    ``folder``'s socket until idle, stopped or stale (see the module docstring)."""
    if is_off() or key != interpreter_key() or confinement("self") is None \
            or not safe_folder(folder, create=True):
        return  # a server in a sandbox would serve its sandbox to callers outside it
    lock = _lock(os.path.join(folder, f"{key}.lock"))
    if lock is None:  # another server has the socket
        return
    warm_client.in_server = True  # what its children run, they run here, never handed on
    begun = time.time_ns()
    preload()
    files = loaded_files()
    if any(mtime > begun for mtime, _ in files.values()):  # changed while it imported
        return
    _Server(folder, key, lock, files).run()


# The lines of /proc/PID/status that tell how a process is confined.
_STATUS_FIELDS = ("Uid", "Gid", "Groups", "NoNewPrivs", "Seccomp", "Seccomp_filters",
                  "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
_NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts")


def confinement(pid: int | str) -> tuple[str, ...] | None:
    """How process ``pid`` (or ``"self"``) is confined, as far as Linux tells another
    process of the same user: its ids and groups, capabilities, no-new-privileges and
    seccomp state, namespaces, root folder, cgroup, resource limits and security label.
    ``None`` when it cannot be read in full, and for a process under no-new-privileges:
    an agent's sandbox sets it, and so do the Landlock rulesets (which /proc does not show)
    and seccomp filters an unprivileged process installs, so such a caller always runs its
    command cold, inside its own sandbox. A seccomp filter without it (a container's,
    installed by a privileged runtime) is compared as part of the rest: the mode and the
    number of filters."""
    base = f"/proc/{pid}"
    try:
        with open(f"{base}/status", encoding="utf-8") as handle:
            status = dict(line.rstrip("\n").partition(":")[::2] for line in handle)
        fields = tuple(status.get(name, "").strip() for name in _STATUS_FIELDS)
        if status.get("NoNewPrivs", "").strip() not in ("", "0"):
            return None
        links = tuple(os.readlink(f"{base}/ns/{name}") if os.path.lexists(f"{base}/ns/{name}")
                      else "" for name in _NAMESPACES)
        files = []
        for name in ("root",):
            files.append(os.readlink(f"{base}/{name}"))
        for name in ("cgroup", "limits", "attr/current"):
            try:
                with open(f"{base}/{name}", "rb") as handle:
                    files.append(handle.read().decode("utf-8", "replace"))
            except OSError as exc:  # no such file, or no security module to label it
                if exc.errno not in (errno.ENOENT, errno.EINVAL):
                    raise
                files.append("")
    except (OSError, ValueError):
        return None
    return fields + links + tuple(files)


def _lock(path: str) -> int | None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


def _reply(tag: bytes, value: int = 0) -> bytes:
    return tag + value.to_bytes(4, "big", signed=True)


class _Server:
    def __init__(self, folder: str, key: str, lock: int,
                 files: dict[str, tuple[int, int]]) -> None:
        self.key, self.lock, self.files = key, lock, files
        self.path = socket_path(folder, key)
        self.pid_path = os.path.join(folder, f"{key}.pid")
        self.idle = idle_seconds()
        self.children: dict[int, socket.socket] = {}
        self.stopping = False
        self.last = time.monotonic()
        self.listener: socket.socket | None = None
        self.inode = 0
        self.wake_r, self.wake_w = os.pipe()
        self.own = confinement("self")
        self.started = time.time()
        self.served = self.cold = 0

    def run(self) -> None:
        for fd in (self.wake_r, self.wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, _noted)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        try:
            self._listen()
            self._loop()
        finally:
            self._unlisten()
            for conn in self.children.values():
                conn.close()

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        fresh = f"{self.path}.{os.getpid()}"
        with contextlib.suppress(OSError):
            os.unlink(fresh)
        listener.bind(fresh)
        os.chmod(fresh, 0o600)
        listener.listen(16)
        os.replace(fresh, self.path)
        self.inode = os.stat(self.path).st_ino
        self.listener = listener
        with open(f"{self.pid_path}.{os.getpid()}", "w", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
        os.replace(f"{self.pid_path}.{os.getpid()}", self.pid_path)

    def _unlisten(self) -> None:
        """Stop taking requests and let another server have the socket."""
        if self.listener is None:
            return
        self.listener.close()
        self.listener = None
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        with contextlib.suppress(OSError), open(self.pid_path, encoding="utf-8") as held:
            if held.read().strip() == str(os.getpid()):
                os.unlink(self.pid_path)
        os.close(self.lock)

    def _stop(self, _number: int, _frame: FrameType | None) -> None:
        self.stopping = True

    def _loop(self) -> None:
        while True:
            self._reap()
            if self.stopping:
                self._unlisten()
                if not self.children:
                    return
            waited = time.monotonic() - self.last
            if not self.children and waited >= self.idle:
                return
            timeout = None if self.children else self.idle - waited
            poller = select.poll()
            poller.register(self.wake_r, select.POLLIN)
            if self.listener is not None:
                poller.register(self.listener, select.POLLIN)
            callers = {conn.fileno(): pid for pid, conn in self.children.items()}
            for fd in callers:  # never POLLIN: the child reads its caller's go-ahead
                poller.register(fd, select.POLLRDHUP)
            events = dict(poller.poll(None if timeout is None else timeout * 1000))
            if self.wake_r in events:
                with contextlib.suppress(OSError):
                    while os.read(self.wake_r, 512):
                        pass
            for fd, pid in callers.items():
                if events.get(fd, 0) & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                    self._caller_gone(pid)
            if self.listener is not None and self.listener.fileno() in events:
                try:
                    conn, _ = self.listener.accept()
                except OSError:
                    continue
                self.last = time.monotonic()
                try:
                    self._take(conn)
                except Exception:  # noqa: BLE001 - one bad request never stops the server
                    conn.close()

    def _caller_gone(self, pid: int) -> None:
        """The caller of child ``pid`` went away (killed, say, by an agent's time limit):
        its command ends with it, as a cold process's would, and takes its process group
        (the checks it started) along."""
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
                return

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(_reply(EXITED, os.waitstatus_to_exitcode(status)))
                conn.close()
            self.last = time.monotonic()

    def _take(self, conn: socket.socket) -> None:
        """Check one request and fork its child, or refuse it."""
        conn.settimeout(5.0)
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        peer, uid = (int.from_bytes(creds[at:at + 4], sys.byteorder) for at in (0, 4))
        if uid != os.getuid():
            conn.close()  # another user: no answer at all
            return
        if peer in self.children:  # a command of its own asks again: it runs cold
            conn.sendall(_reply(REFUSED))
            conn.close()
            return
        fds: list[int] = []
        try:
            fields, fds = _receive(conn)
            if len(fields) == 2 and fields[0] in (STATUS, STOP) and not fds:
                self._answer(conn, fields[0] == STOP, fields[1] == self.key.encode())
                return
            mine = confinement(peer)
            if (len(fds) != 4 or len(fields) < 7 or fields[0] != MAGIC
                    or fields[1] != self.key.encode() or mine is None or mine != self.own):
                # Another interpreter, or a caller confined otherwise than this server
                # (namespaces, cgroup, limits, capabilities, security label, a sandbox):
                # what it runs must run inside its own confinement, so it runs cold.
                self.cold += 1
                conn.sendall(_reply(REFUSED))
                conn.close()
                return
            if stale(self.files):  # the caller runs today's code cold; this server ends
                conn.sendall(_reply(STALE))
                conn.close()
                self.stopping = True
                self._unlisten()
                return
            pid = os.fork()
            if pid == 0:
                self._child(conn, fds, fields)
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)
            self.children[pid] = conn
            self.served += 1
            with contextlib.suppress(OSError):
                conn.sendall(_reply(CHILD, pid))
        finally:
            for fd in fds:
                os.close(fd)

    def _answer(self, conn: socket.socket, stop: bool, same_key: bool) -> None:
        """A status request (``rein driver warm``), or a stop."""
        if stop and same_key:
            self.stopping = True
        status = {"pid": os.getpid(), "key": self.key, "same_interpreter": same_key,
                  "started_at": self.started, "served": self.served, "ran_cold": self.cold,
                  "running": len(self.children), "idle_seconds": self.idle,
                  "stopping": self.stopping, "modules": len(sys.modules)}
        body = json.dumps(status).encode()
        with contextlib.suppress(OSError):
            conn.sendall(len(body).to_bytes(4, "big") + body)
        conn.close()

    def _child(self, conn: socket.socket, fds: list[int], fields: list[bytes]) -> None:
        """The forked child: become the caller and run its command; never returns."""
        code = 1
        try:
            with contextlib.suppress(OSError):
                os.setpgid(0, 0)
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
                signal.signal(number, signal.SIG_DFL)
            if self.listener is not None:
                self.listener.close()
            for fd in (self.wake_r, self.wake_w, self.lock):
                os.close(fd)
            for other in self.children.values():
                other.close()
            conn.settimeout(GO_SECONDS)
            if conn.recv(1) != b"G":  # the caller gave up and runs the command itself
                os._exit(0)
            _become(fds, fields)
            fds.clear()
            conn.sendall(_reply(STARTED))
            conn.close()
            code = _run()
        except BaseException:  # noqa: BLE001 - a child never returns into the server
            code = 1
        finally:
            os._exit(code)


def _noted(_number: int, _frame: FrameType | None) -> None:
    """SIGCHLD: the wakeup descriptor has woken the loop, which reaps."""


def _receive(conn: socket.socket) -> tuple[list[bytes], list[int]]:
    """The request's fields and the descriptors that came with it."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 8)
    fds = list(fds)
    try:
        while len(data) < 4:
            more = conn.recv(4 - len(data))
            if not more:
                raise OSError(errno.ECONNRESET, "short request")
            data += more
        size = int.from_bytes(data[:4], "big")
        if size > REQUEST_LIMIT:
            raise OSError(errno.EMSGSIZE, "request too large")
        body = [data[4:]]
        have = len(body[0])
        while have < size:
            more = conn.recv(min(1 << 16, size - have))
            if not more:
                raise OSError(errno.ECONNRESET, "short request")
            body.append(more)
            have += len(more)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return b"".join(body).split(b"\0"), fds


def _become(fds: list[int], fields: list[bytes]) -> None:
    """Take the caller's streams, directory, umask, environment and arguments."""
    specs = [field.decode().split(":") for field in fields[3:6]]
    count = int(fields[6])
    argv = [os.fsdecode(arg) for arg in fields[7:7 + count]]
    for number, fd in enumerate(fds[:3]):
        os.dup2(fd, number)
    os.fchdir(fds[3])
    for fd in fds:
        os.close(fd)
    os.umask(int(fields[2], 8))
    os.environb.clear()
    for item in fields[7 + count:]:
        name, _, value = item.partition(b"=")
        if name:
            os.environb[name] = value
    time.tzset()
    with contextlib.suppress(locale.Error):
        locale.setlocale(locale.LC_CTYPE, "")
    for number, label in enumerate(("stdin", "stdout", "stderr")):
        stream = _stream(number, "r" if number == 0 else "w", specs[number], f"<{label}>")
        setattr(sys, label, stream)
        setattr(sys, f"__{label}__", stream)
    sys.argv = argv


def _stream(fd: int, mode: str, spec: list[str], name: str) -> io.TextIOWrapper:
    """A standard stream as the caller's interpreter made it (encoding, errors, line
    buffering, write-through), on descriptor ``fd``."""
    encoding, errors, line, through = spec
    raw = io.FileIO(fd, mode, closefd=False)
    raw.name = name
    buffer: io.BufferedIOBase | io.FileIO
    if through == "1" and mode == "w":  # python -u
        buffer = raw
    else:
        size = io.DEFAULT_BUFFER_SIZE  # as io.open picks it
        with contextlib.suppress(OSError):
            size = os.fstat(fd).st_blksize if os.fstat(fd).st_blksize > 1 else size
        buffer = io.BufferedReader(raw, size) if mode == "r" else io.BufferedWriter(raw, size)
    return io.TextIOWrapper(buffer, encoding=encoding, errors=errors, newline="\n",
                            line_buffering=line == "1", write_through=through == "1")


def _run() -> int:
    """Run the command as the console script does, and end as a cold interpreter ends."""
    from rein.cli import run

    code = 0
    try:
        run()
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:  # uncaught: a traceback, then killed by SIGINT
        traceback.print_exc()
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    except BaseException:  # noqa: BLE001 - as the interpreter reports it
        sys.excepthook(*sys.exc_info())
        code = 1
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:  # non-daemon threads are waited for, as at a normal exit
        shutdown()
    atexit._run_exitfuncs()
    return 120 if not _flush() and code == 0 else code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _flush() -> bool:
    """Flush stdout and stderr; whether stdout took it."""
    took = True
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - as the interpreter's exit ignores it
            took = took and stream is not sys.stdout
    return took
