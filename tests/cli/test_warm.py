"""The warm server (cli/warm_server.py, cli/warm_client.py): a plain ``rein next`` or
``rein submit`` handed to a process that has imported them already, forked per turn.

Each test gets a runtime folder of its own (``XDG_RUNTIME_DIR``), so its server is its own,
and stops it at the end. The suite otherwise runs with ``REIN_WARM=off`` (tests/conftest.py).
Nothing here is timed: whether a turn was served warm is what the server counts.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from rein.cli import warm_client
from rein.cli.warm_server import PRELOAD, confinement

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the warm server is Linux-only")

REIN = str(Path(sys.executable).parent / "rein")
T = TypeVar("T")
GREETING = "hello-from-the-caller"
GRAPH = """\
ags_version: "1.0"
kind: AgenticGraph
id: rein/tests/warm-turns
title: Warm driver turns
version: 1.0.0
requires_conformance: 1
objective: Write a note; the check reads the caller's environment.
entrypoints: [write]
nodes:
  write:
    type: task
    title: Write note.txt
    description: Write note.txt with one line.
    outputs:
      note: {type: file, description: The note., path_hint: note.txt}
    requirements:
      permissions: ["fs:read:**", "fs:write:note.txt"]
      workspace: read_write
      environment: [GREETING]
    success:
      criteria:
        - id: greeted
          kind: command
          description: The caller's GREETING reached the check.
          run: CHECK
          expect_exit_code: 0
          timeout_seconds: 120
    estimate: { effort: xs, cost_usd: 0 }
outputs:
  note: {type: file, description: The note., from: nodes.write.outputs.note}
"""
LOOKS = 1200  # how often a test looks for what it waits for, 50 ms apart: work bounded
HANG = 600  # seconds: a hung child fails the test instead of stopping the suite


def until(look: Callable[[], T | None], what: str) -> T:
    """What ``look`` finds, looking up to LOOKS times; fail saying ``what`` otherwise."""
    for _ in range(LOOKS):
        found = look()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what} (after {LOOKS} looks)")


class Warm:
    """A runtime folder with this test's warm server, and what its turns need."""

    def __init__(self, root: Path) -> None:
        self.root = root
        runtime = root / "runtime"
        runtime.mkdir(mode=0o700)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
        self.env.update({"XDG_RUNTIME_DIR": str(runtime), "HOME": str(root / "home"),
                         "REIN_WARM_IDLE": "120", "PYTHONIOENCODING": "utf-8"})
        self.env.pop("XDG_CONFIG_HOME", None)

    def rein(self, *args: str, cwd: Path, input: str | None = None,
             **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([REIN, *args], cwd=cwd, env={**self.env, **env}, input=input,
                              capture_output=True, text=True, check=False, timeout=120)

    def status(self) -> dict[str, object]:
        done = self.rein("driver", "warm", "--json", cwd=self.root)
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        assert isinstance(shown, dict)
        return shown

    def wait(self, test: Callable[[dict[str, object]], object],
             what: str) -> dict[str, object]:
        return until(lambda: shown if test(shown := self.status()) else None, what)

    def started(self, cwd: Path) -> dict[str, object]:
        """Start the server the way a first turn does, and wait until it listens."""
        first = self.rein("next", cwd=cwd)
        assert first.returncode in (0, 1, 3, 4), first.stderr
        return self.wait(lambda s: s["running"], "the server never listened")

    def workspace(self, name: str, check: str = 'test "$GREETING" = ' + GREETING) -> Path:
        """A git repository whose run waits for the driver (set up cold)."""
        ws = self.root / name
        ws.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
        (ws / "warm.agraph.yaml").write_text(GRAPH.replace("CHECK", check))
        off = {"REIN_WARM": "off"}
        digest = self.rein("graph", "digest", "warm.agraph.yaml", cwd=ws, **off).stdout.strip()
        started = self.rein("run", "warm.agraph.yaml", "--approve", digest, cwd=ws, **off)
        assert started.returncode == 3, started.stderr
        return ws

    def envelope(self, ws: Path) -> str:
        shown = self.rein("next", "--json", cwd=ws, REIN_WARM="off")
        return json.dumps(json.loads(shown.stdout)["example"])

    def stop(self) -> None:
        shown = self.status()
        if not shown["running"]:
            return
        self.rein("driver", "warm", "stop", cwd=self.root)
        pid = int(str(shown["pid"]))
        try:
            until(lambda: not alive(pid), "the server did not stop")
        except AssertionError:
            os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie no one has reaped yet has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    server = Warm(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def test_a_turn_served_warm_answers_as_a_cold_one(warm: Warm) -> None:
    cold_ws, warm_ws = warm.workspace("cold"), warm.workspace("warm")
    before = warm.started(warm.root)["served"]
    cold = warm.rein("next", "--json", cwd=cold_ws, REIN_WARM="off")
    hot = warm.rein("next", "--json", cwd=warm_ws)
    assert warm.status()["served"] == int(str(before)) + 1
    assert hot.returncode == cold.returncode == 3
    shown, expected = json.loads(hot.stdout), json.loads(cold.stdout)
    for answer in (shown, expected):  # the two runs differ only in their ids
        answer.pop("run_id"), answer.pop("token"), answer.pop("example")
        answer.pop("respond_with")
    assert shown == expected and shown["status"] == "instruction"

    # The envelope on the caller's stdin, the check in the caller's environment.
    (warm_ws / "note.txt").write_text("hi\n")
    done = warm.rein("submit", "-", cwd=warm_ws, input=warm.envelope(warm_ws),
                     GREETING=GREETING)
    assert warm.status()["served"] == int(str(before)) + 2
    assert done.returncode == 0, done.stdout + done.stderr
    assert "accepted for write attempt 1" in done.stderr and "succeeded" in done.stdout


def test_the_turn_takes_the_callers_environment_not_the_servers(warm: Warm) -> None:
    ws = warm.workspace("ws")
    # The server starts with GREETING as the check wants it; the caller's turn does not.
    warm.env["GREETING"] = GREETING
    before = int(str(warm.started(ws)["served"]))
    del warm.env["GREETING"]
    (ws / "note.txt").write_text("hi\n")
    done = warm.rein("submit", "-", cwd=ws, input=warm.envelope(ws), GREETING="someone-else")
    assert warm.status()["served"] == before + 1
    assert done.returncode == 1 and "greeted" in done.stdout + done.stderr


def test_the_callers_folder_and_umask_are_the_turns(warm: Warm, tmp_path: Path) -> None:
    ws = warm.workspace("ws", check='test "$(umask)" = 0077')
    before = int(str(warm.started(ws)["served"]))  # a server of umask 022
    empty = tmp_path / "empty"
    empty.mkdir()
    elsewhere = warm.rein("next", "--json", cwd=empty)
    assert elsewhere.returncode != 3 and json.loads(elsewhere.stdout)["error"]["code"] == \
        "STORE404"
    (ws / "note.txt").write_text("hi\n")
    done = subprocess.run([REIN, "submit", "-"], cwd=ws, input=warm.envelope(ws), text=True,
                          env=warm.env, capture_output=True, check=False,
                          preexec_fn=lambda: os.umask(0o077))
    assert done.returncode == 0, done.stderr
    assert warm.status()["served"] == before + 2


def test_a_caller_under_no_new_privileges_runs_cold_and_starts_nothing(warm: Warm) -> None:
    ws = warm.workspace("ws")
    confined = subprocess.run(["setpriv", "--no-new-privs", REIN, "next", "--json"], cwd=ws,
                              env=warm.env, capture_output=True, text=True, check=False)
    assert confined.returncode == 3 and json.loads(confined.stdout)["status"] == "instruction"
    # A client that starts a server makes its socket folder first, before it forks one.
    assert not (Path(warm.env["XDG_RUNTIME_DIR"]) / "rein").exists()
    assert warm.status()["running"] is False
    warm.started(ws)
    confined = subprocess.run(["setpriv", "--no-new-privs", REIN, "next", "--json"], cwd=ws,
                              env=warm.env, capture_output=True, text=True, check=False)
    assert confined.returncode == 3
    assert warm.status()["served"] == 0  # the first turn started the server, cold too
    assert warm.rein("next", "--json", cwd=ws).returncode == 3
    assert warm.status()["served"] == 1  # the same turn, unconfined


def test_confinement_tells_apart_what_a_caller_may_differ_in() -> None:
    own = confinement("self")
    assert own is not None
    same = subprocess.Popen(["sleep", "30"])
    nnp = subprocess.Popen(["setpriv", "--no-new-privs", "sleep", "30"])
    limited = subprocess.Popen(["sleep", "30"], preexec_fn=lambda: resource.setrlimit(  # noqa: PLW1509
        resource.RLIMIT_NOFILE, (64, 64)))
    try:
        until(lambda: "setpriv" not in Path(f"/proc/{nnp.pid}/cmdline").read_text(),
              "setpriv never ran sleep")
        assert confinement(same.pid) == own
        assert confinement(nnp.pid) is None
        assert confinement(limited.pid) not in (None, own)
    finally:
        for child in (same, nnp, limited):
            child.kill()
            child.wait()


def _allow_all_seccomp_filter() -> None:
    """Install a seccomp filter that allows every call (needs CAP_SYS_ADMIN without
    no-new-privileges, as a container runtime has)."""
    import ctypes

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte),
                    ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    allow = (SockFilter * 1)(SockFilter(0x06, 0, 0, 0x7FFF0000))  # BPF_RET|BPF_K, ALLOW
    program = SockFprog(1, allow)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(22, 2, ctypes.byref(program), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def test_a_seccomp_filter_the_server_lacks_sets_a_caller_apart() -> None:
    own = confinement("self")
    try:
        filtered = subprocess.Popen(["sleep", "30"],
                                    preexec_fn=_allow_all_seccomp_filter)  # noqa: PLW1509
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot install a seccomp filter here: {exc}")
    try:
        seen = confinement(filtered.pid)
        assert seen is not None and seen != own  # compared, not refused outright
        assert "Seccomp:\t2" in Path(f"/proc/{filtered.pid}/status").read_text()
    finally:
        filtered.kill()
        filtered.wait()


def test_another_interpreter_or_a_hand_made_request_is_refused(warm: Warm) -> None:
    ws = warm.workspace("ws")
    shown = warm.started(ws)
    folder = Path(warm.env["XDG_RUNTIME_DIR"]) / "rein"
    [path] = folder.glob("*.sock")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(10)
    conn.connect(str(path))
    body = b"\0".join([warm_client.MAGIC, b"0" * 16, b"22"])  # no descriptors, wrong key
    conn.sendall(len(body).to_bytes(4, "big") + body)
    assert conn.recv(5) == warm_client.REFUSED + (0).to_bytes(4, "big")
    conn.close()
    after = warm.status()
    assert after["served"] == shown["served"] and after["running"] is True


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to connect as another user")
def test_another_user_gets_no_answer(warm: Warm) -> None:
    ws = warm.workspace("ws")
    warm.started(ws)
    folder = Path(warm.env["XDG_RUNTIME_DIR"]) / "rein"
    [path] = folder.glob("*.sock")
    opened = [(p, p.stat().st_mode & 0o777) for p in (folder, path)]
    try:  # let user nobody reach the socket: only the server's own check is left
        for p, _ in opened:
            p.chmod(0o777)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # a child that becomes user nobody and asks
            answer = b"error"
            try:
                os.chdir(folder)  # no need to pass the test's private folders above it
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.settimeout(10)
                conn.connect(path.name)  # and waits: the server speaks first or closes
                answer = b"said:" + conn.recv(16)
            except BaseException as exc:  # noqa: BLE001 - told to the test
                answer = repr(exc).encode()
            finally:
                os.write(write, answer)
                os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        with os.fdopen(read, "rb") as heard:
            answer = heard.read()
    finally:
        for p, mode in opened:
            p.chmod(mode)
    assert answer == b"said:"  # closed on, without a word


def _running_turn(warm: Warm, ws: Path) -> subprocess.Popen[str]:
    """A submit whose check sleeps, handed to the server and running."""
    (ws / "note.txt").write_text("hi\n")
    envelope = warm.envelope(ws)
    client = subprocess.Popen([REIN, "submit", "-"], cwd=ws, env=warm.env, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert client.stdin is not None
    client.stdin.write(envelope)
    client.stdin.close()
    warm.wait(lambda s: s["running_turns"] == 1, "the turn never started")
    return client  # its pipes are read (and closed) by the caller


def test_a_caller_killed_mid_turn_takes_its_turn_along(warm: Warm) -> None:
    ws = warm.workspace("ws", check="sleep 100")
    warm.started(ws)
    client = _running_turn(warm, ws)
    client.kill()
    client.wait(timeout=HANG)
    warm.wait(lambda s: s["running_turns"] == 0, "the turn outlived its caller")
    shown = json.loads(warm.rein("next", "--json", cwd=ws, REIN_WARM="off").stdout)
    assert shown["status"] != "done"  # the check never finished: nothing was decided


def test_an_interrupt_reaches_the_turn(warm: Warm) -> None:
    ws = warm.workspace("ws", check="sleep 100")
    warm.started(ws)
    client = _running_turn(warm, ws)
    client.send_signal(signal.SIGINT)  # wherever the turn is, it stops
    client.wait(timeout=HANG)
    assert client.stderr is not None
    err = client.stderr.read()  # the turn has ended too: it held the other end
    assert client.returncode == 130, err
    assert "interrupted" in err
    warm.wait(lambda s: s["running_turns"] == 0, "the turn went on")


def test_a_server_killed_mid_turn_leaves_the_turn_to_end_before_its_caller_does(
        warm: Warm) -> None:
    ws = warm.workspace("ws", check='sleep 2; test "$GREETING" = ' + GREETING)
    server = int(str(warm.started(ws)["pid"]))
    (ws / "note.txt").write_text("hi\n")
    envelope = warm.envelope(ws)
    client = subprocess.Popen([REIN, "submit", "-"], cwd=ws, text=True,
                              env={**warm.env, "GREETING": GREETING}, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert client.stdin is not None
    client.stdin.write(envelope)
    client.stdin.close()
    warm.wait(lambda s: s["running_turns"] == 1, "the turn never started")
    os.kill(server, signal.SIGKILL)
    client.wait(timeout=HANG)
    assert client.stderr is not None and client.stdout is not None
    out, err = client.stdout.read(), client.stderr.read()
    assert client.returncode == 1 and "the warm server stopped during the command" in err
    assert "accepted for write attempt 1" in err and "succeeded" in out  # all of its lines
    done = warm.rein("next", "--json", cwd=ws, REIN_WARM="off")
    assert json.loads(done.stdout)["status"] == "done", done.stdout  # it ran to its end


def test_changed_code_sends_the_turn_back_cold_and_stops_the_server(warm: Warm) -> None:
    # Code the server loaded: a sitecustomize on the caller's and so the server's path.
    extra = warm.root / "site"
    extra.mkdir()
    (extra / "sitecustomize.py").write_text("X = 1\n")
    warm.env["PYTHONPATH"] = str(extra)
    ws = warm.workspace("ws")
    shown = warm.started(ws)
    (extra / "sitecustomize.py").write_text("X = 22\n")  # a different size
    done = warm.rein("next", "--json", cwd=ws)
    assert done.returncode == 3 and json.loads(done.stdout)["status"] == "instruction"
    pid = int(str(shown["pid"]))
    until(lambda: not alive(pid), "the stale server went on")


def test_rein_driver_warm_says_whether_a_server_runs(warm: Warm) -> None:
    none = warm.rein("driver", "warm", cwd=warm.root)
    assert none.returncode == 0 and "no warm server" in none.stdout
    off = warm.rein("driver", "warm", "--json", cwd=warm.root, REIN_WARM="off")
    assert json.loads(off.stdout) == {"running": False, "turned_off": True}
    warm.started(warm.root)
    shown = warm.rein("driver", "warm", cwd=warm.root)
    assert "turn(s) served" in shown.stdout
    stopped = warm.rein("driver", "warm", "stop", cwd=warm.root)
    assert "stopped" in stopped.stdout
    warm.wait(lambda s: not s["running"], "the server did not stop")


# What a module computes at import, every turn the server forks shares: the modules it
# preloads may read nothing of a caller at import (its environment, folder, home, process
# id, clock or standard streams); inside functions they may. Data is read by naming it,
# a function by calling it (``default_factory=Path.cwd`` calls it later, per instance).
CALLER_DATA = {("os", "environ"), ("os", "environb"), ("sys", "argv"), ("sys", "stdout"),
               ("sys", "stderr"), ("sys", "stdin")}
CALLER_CALLS = {("os", "getenv"), ("os", "getcwd"), ("os", "getpid"), ("os", "getppid"),
                ("os", "umask"), ("Path", "cwd"), ("Path", "home"), ("path", "expanduser"),
                ("time", "time"), ("time", "time_ns"), ("datetime", "now"),
                ("socket", "gethostname"), ("shutil", "get_terminal_size")}


def _import_time_nodes(tree: ast.Module) -> Iterator[ast.AST]:
    """The nodes a module runs at import: everything but function bodies (their defaults
    and decorators run at import, and so do class bodies)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            stack.extend([*args.defaults, *(d for d in args.kw_defaults if d is not None)])
            if not isinstance(node, ast.Lambda):
                stack.extend(node.decorator_list)
            continue
        stack.extend(ast.iter_child_nodes(node))


def test_the_preloaded_modules_read_nothing_of_a_caller_at_import() -> None:
    found = []
    for name in PRELOAD:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        nodes = list(_import_time_nodes(tree))
        called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        for node in nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                pair = (node.value.id, node.attr)
                if pair in CALLER_DATA or (pair in CALLER_CALLS and id(node) in called):
                    found.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr}")
    assert found == []


_LOADED = "import json, sys; from rein.cli.warm_server import preload; preload(); " \
          "print(json.dumps(sorted(sys.modules)))"
_TURN = "import json, sys; from rein.cli import main; code = main(sys.argv[1:]); " \
        "sys.stdout.flush(); print(json.dumps(sorted(sys.modules)), file=sys.stderr)"


def test_the_server_has_imported_what_a_cold_turn_imports(warm: Warm) -> None:
    ws = warm.workspace("ws")
    env = {**warm.env, "REIN_WARM": "off", "GREETING": GREETING}
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", _LOADED], cwd=ws, env=env,
                                           capture_output=True, text=True,
                                           check=True).stdout))
    turn = subprocess.run([sys.executable, "-c", _TURN, "next"], cwd=ws, env=env,
                          capture_output=True, text=True, check=False)
    missing = set(json.loads(turn.stderr.splitlines()[-1])) - loaded
    (ws / "note.txt").write_text("hi\n")
    turn = subprocess.run([sys.executable, "-c", _TURN, "submit", "-"], cwd=ws, env=env,
                          input=warm.envelope(ws), capture_output=True, text=True, check=False)
    assert turn.returncode == 0, turn.stderr
    missing |= set(json.loads(turn.stderr.splitlines()[-1])) - loaded
    assert sorted(m for m in missing if m.startswith("rein")) == []
    assert len(missing) <= 3, sorted(missing)  # a library's own lazy import at most


def test_a_dev_turn_is_served_warm_and_the_server_has_what_it_imports(warm: Warm) -> None:
    ws = warm.root / "flow"
    ws.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / "feature_list.json").write_text(json.dumps({
        "verify": [sys.executable, "-c", "pass"],
        "features": [{"id": "f1", "title": "Feature 1", "priority": 1, "depends_on": []}]}))
    off = {"REIN_WARM": "off"}
    assert warm.rein("dev", cwd=ws, **off).returncode == 3  # the plan waits for a person
    queue = json.loads(warm.rein("approvals", "list", "--json", cwd=ws, **off).stdout)
    approval = queue["approvals"][0]["approval_id"]
    assert warm.rein("approvals", "accept", approval, cwd=ws, **off).returncode == 0
    cold = warm.rein("dev", "--json", cwd=ws, **off)  # starts the feature graph
    assert cold.returncode == 3, cold.stderr

    before = int(str(warm.started(ws)["served"]))
    hot = warm.rein("dev", "--json", cwd=ws)
    assert warm.status()["served"] == before + 1
    assert hot.returncode == 3 and hot.stdout == cold.stdout

    env = {**warm.env, **off}
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", _LOADED], cwd=ws, env=env,
                                           capture_output=True, text=True,
                                           check=True).stdout))
    turn = subprocess.run([sys.executable, "-c", _TURN, "dev"], cwd=ws, env=env,
                          capture_output=True, text=True, check=False)
    assert '"stage": "features"' not in turn.stdout and "feature_f1" in turn.stdout
    missing = set(json.loads(turn.stderr.splitlines()[-1])) - loaded
    assert sorted(m for m in missing if m.startswith("rein")) == []
