"""The fault matrix's parts: one graph doing real work, each surface that runs it, and the
points where a signal lands.

The graph runs a map (two items at a time) beside a loop and a subgraph's child run, then
one last node; every node's check is a real command that leaves a mark (``marks/<point>.*``)
as it starts and then works a little, so a test can wait for a point of the work and send
its signal while that work is in flight. Variants put what a surface needs before the work:
a gate (``rein approvals accept`` continues the run; ``rein resume`` after an answer
recorded alone) or a node served by the driver (``rein submit`` continues the run).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

import yaml

from tests.durability.support import rein_argv, runs

POINTS = ("fan", "child", "last")  # where the work is when the signal lands
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
LOOKS = 3000  # reads of the workspace a test waits for a point at most (~30 s)


def _checked(title: str, point: str, seconds: str, **extra: Any) -> dict[str, Any]:
    """A task whose check marks ``point`` as it starts, then works ``seconds``."""
    check = (f"mkdir -p marks && : > marks/{point}.$$ && sleep {seconds} && "
             f"test -f {title}.txt")
    node: dict[str, Any] = {
        "title": title, "description": f"{title}.",
        "requirements": {"workspace": "read_write", "permissions": [f"fs:write:{title}.txt"]},
        "success": {"criteria": [{"id": "check", "kind": "command",
                                  "description": f"{title} left its file", "run": check,
                                  "timeout_seconds": 30}]},
    }
    node.update(extra)
    return node


def graph(variant: str) -> dict[str, Any]:
    """The matrix graph; ``variant``: ``plain``, ``gated`` or ``driven``."""
    first: list[str] = []
    nodes: dict[str, Any] = {}
    if variant == "gated":
        nodes["go"] = {"type": "gate", "title": "go", "description": "Start?",
                       "gate": {"mode": "approve", "prompt": "Start the work?"}}
        first = ["go"]
    elif variant == "driven":
        nodes["brief"] = {"title": "brief", "description": "Read the brief; nothing to make."}
        first = ["brief"]
    after = {"depends_on": first} if first else {}
    nodes["fan"] = {
        "type": "map", "title": "fan", "description": "One item each.", **after,
        "map": {"over": "['a', 'b', 'c']", "as": "it", "max_items": 5, "max_parallel": 2,
                "collect": {"got": "nodes.work.outputs.v"},
                "body": {"entrypoints": ["work"], "nodes": {"work": _checked(
                    "work", "fan", "0.25", outputs={"v": {"type": "string",
                                                         "description": "v"}})}}},
        "outputs": {"got": {"type": "array", "description": "what the items made"}}}
    nodes["side"] = {
        "type": "loop", "title": "side", "description": "Twice.", **after,
        "loop": {"mode": "repeat", "max_iterations": 2, "body": {
            "entrypoints": ["step"], "nodes": {"step": _checked("step", "side", "0.1")}}}}
    nodes["child"] = {
        "type": "subgraph", "title": "child", "description": "A child run.", **after,
        "subgraph": {"inline": {"entrypoints": ["inner"], "nodes": {
            "inner": _checked("inner", "child", "0.25")}}}}
    nodes["last"] = _checked("last", "last", "0.25", depends_on=["fan", "side", "child"])
    return {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": f"tests/faults-{variant}",
        "title": "fault matrix", "objective": "resume to the uninterrupted record",
        "requires_conformance": 3, "constraints": {"max_parallel_nodes": 3},
        "entrypoints": first or ["fan", "side", "child"], "nodes": nodes,
    }


def answers() -> dict[str, Any]:
    """The scripted worker's answers: every node but the driver's ``brief``."""
    made = {"outputs": {}, "delay_seconds": 0.02}
    return {"nodes": {
        "work": [{**made, "outputs": {"v": "made"}, "files": {"work.txt": "w\n"}}],
        "step": [{**made, "files": {"step.txt": "s\n"}}],
        "inner": [{**made, "files": {"inner.txt": "i\n"}}],
        "last": [{**made, "files": {"last.txt": "l\n"}}],
    }}


class Workspace:
    """One workspace of the matrix: its graph, its store, rein commands run in it."""

    def __init__(self, root: Path, variant: str) -> None:
        self.root = root
        self.variant = variant
        root.mkdir(parents=True, exist_ok=True)
        data = graph(variant)
        (root / "g.agraph.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        (root / "answers.yaml").write_text(yaml.safe_dump(answers(), sort_keys=False))
        from rein.formats.canonical import ags_digest

        self.digest = ags_digest(data)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
        home = root / ".home"
        self.env.update({
            "REIN_ALLOW_MODEL_REQUESTS": "0", "REIN_SCRIPTED_ANSWERS": str(root / "answers.yaml"),
            "REIN_WARM": "off",  # the process signalled is the one that does the work
            "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "REIN_MANAGED_CONFIG": str(root / ".etc" / "rein.toml"), "REIN_USER_CONFIG": ""})

    def rein(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(rein_argv(*args), cwd=self.root, env=self.env, input=stdin,
                              capture_output=True, text=True, timeout=120, check=False)

    def start(self, *args: str) -> subprocess.Popen[str]:
        """A rein process left running; its stderr goes to a log beside the workspace (the
        workspace holds only what the work writes: a driver's submit checks that)."""
        with self.root.with_suffix(".log").open("a") as log:
            return subprocess.Popen(rein_argv(*args), cwd=self.root, env=self.env, text=True,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=log)

    def log(self) -> str:
        path = self.root.with_suffix(".log")
        return path.read_text() if path.exists() else ""

    def run_id(self) -> str:
        """The workspace's one top-level run (read here: no process to start)."""
        [top] = runs(self.root)
        return str(top["run_id"])

    def status(self, run_id: str) -> str:
        return next(r["status"] for r in runs(self.root) if r["run_id"] == run_id)

    def reached(self, point: str) -> bool:
        marks = self.root / "marks"
        return marks.is_dir() and any(p.name.startswith(f"{point}.") for p in marks.iterdir())

    # -- what comes before the work, per variant ----------------------------------------

    def gate_approval(self) -> str:
        listed = json.loads(self.rein("approvals", "list", "--json").stdout)["approvals"]
        [gate] = [a for a in listed if a["kind"] == "gate"]
        return str(gate["approval_id"])

    def to_the_gate(self) -> str:
        done = self.rein("run", "g.agraph.yaml", "--approve", self.digest)
        assert done.returncode == 3, done.stderr  # waiting at the gate
        return self.gate_approval()

    def envelope(self) -> str:
        done = self.rein("run", "g.agraph.yaml", "--approve", self.digest)
        assert done.returncode == 3, done.stderr  # waiting for the driver
        shown = json.loads(self.rein("next", "--json").stdout)
        assert shown["status"] == "instruction", shown
        return json.dumps(shown["example"])


# -- the surfaces ---------------------------------------------------------------------------


class Surface:
    """A process that runs the work: started, then signalled (or left to end)."""

    name = ""
    variant = "plain"

    def begin(self, ws: Workspace) -> subprocess.Popen[str]:
        raise NotImplementedError

    def clean(self, ws: Workspace) -> None:
        """Run the work on this surface to its end, uninterrupted."""
        proc = self.begin(ws)
        _close(proc)
        assert proc.returncode == 0, ws.log()

    def stop(self, proc: subprocess.Popen[str]) -> None:
        """After the signal: let the process end (closing what the test holds open)."""
        _close(proc)


class Run(Surface):
    name = "run"

    def begin(self, ws: Workspace) -> subprocess.Popen[str]:
        return ws.start("run", "g.agraph.yaml", "--approve", ws.digest)


class Resume(Surface):
    name = "resume"
    variant = "gated"

    def begin(self, ws: Workspace) -> subprocess.Popen[str]:
        gate = ws.to_the_gate()
        done = ws.rein("approvals", "accept", gate, "--no-continue")
        assert done.returncode == 0, done.stderr
        return ws.start("resume", ws.run_id())


class Accept(Surface):
    name = "approvals accept"
    variant = "gated"

    def begin(self, ws: Workspace) -> subprocess.Popen[str]:
        return ws.start("approvals", "accept", ws.to_the_gate())


class Submit(Surface):
    name = "submit"
    variant = "driven"

    def begin(self, ws: Workspace) -> subprocess.Popen[str]:
        envelope = ws.envelope()
        proc = ws.start("submit", "-")
        assert proc.stdin is not None
        proc.stdin.write(envelope)
        proc.stdin.close()
        proc.stdin = None  # nothing more to say: communicate() must not flush it
        return proc


class Serve(Surface):
    """``rein serve``: the run is started from the console's plan view."""

    name = "serve"

    def begin(self, ws: Workspace) -> subprocess.Popen[str]:
        import httpx

        proc = ws.start("serve", "--port", "0")
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "rein serve printed no URL"
        url = proc.stdout.readline().strip()
        base = url.split("/?")[0]
        with httpx.Client(base_url=base, timeout=60) as client:
            client.get(url, follow_redirects=True)
            plan = client.get("/plan", params={"path": "g.agraph.yaml"}).text
            csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', plan)
            assert csrf is not None, plan
            started = client.post("/plan/run", headers={"origin": base}, data={
                "csrf": csrf.group(1), "path": "g.agraph.yaml", "digest": ws.digest})
            assert started.status_code == 303, started.text
        return proc

    def clean(self, ws: Workspace) -> None:
        proc = self.begin(ws)
        for _ in range(LOOKS):
            if [r for r in runs(ws.root) if r["status"] == "succeeded"]:
                break
            _pause()
        proc.send_signal(signal.SIGINT)
        _close(proc)


class _Stdio(Surface):
    """A stdio JSON-RPC server: a thread talks to it as a client would (open, start a turn
    that names the graph, accept every question, the digest first) and sets ``ended`` once
    the turn is over, or the process is gone."""

    args: tuple[str, ...] = ()

    def begin(self, ws: Workspace) -> subprocess.Popen[str]:
        proc = ws.start(*self.args, "--workspace", str(ws.root))
        ended = threading.Event()
        proc.ended = ended  # type: ignore[attr-defined]

        def talk() -> None:
            assert proc.stdin is not None and proc.stdout is not None
            try:
                self.talk(ws, proc.stdin, proc.stdout)
            except (OSError, ValueError, KeyError):
                pass  # the process was signalled: its pipes closed mid-way
            ended.set()

        threading.Thread(target=talk, daemon=True).start()
        return proc

    def talk(self, ws: Workspace, send: IO[str], read: IO[str]) -> None:
        raise NotImplementedError

    def clean(self, ws: Workspace) -> None:
        proc = self.begin(ws)
        assert proc.ended.wait(120), ws.log()  # type: ignore[attr-defined]
        _close(proc)


class AppServer(_Stdio):
    """``rein app-server``: a turn whose input mentions the graph (Codex's JSON lines)."""

    name = "app-server"
    args = ("app-server",)

    def talk(self, ws: Workspace, send: IO[str], read: IO[str]) -> None:
        _send(send, {"id": 1, "method": "initialize",
                     "params": {"clientInfo": {"name": "faults", "version": "1"}}})
        _read_reply(read, 1)
        _send(send, {"method": "initialized"})
        _send(send, {"id": 2, "method": "thread/start", "params": {}})
        thread = _read_reply(read, 2)["result"]["thread"]["id"]
        _send(send, {"id": 3, "method": "turn/start", "params": {"threadId": thread, "input": [
            {"type": "mention", "name": "g", "path": "g.agraph.yaml"}]}})
        for line in read:
            message = json.loads(line)
            if "method" in message and "id" in message:  # a question: accept it
                questions = message["params"].get("questions") or []
                _send(send, {"id": message["id"], "result": {"answers": {
                    q["id"]: {"answers": ["accept"]} for q in questions}}})
            elif message.get("method") == "turn/completed":
                return


class Acp(_Stdio):
    """``rein acp``: a prompt that links the graph (JSON-RPC 2.0, as ACP clients speak it)."""

    name = "acp"
    args = ("acp",)

    def talk(self, ws: Workspace, send: IO[str], read: IO[str]) -> None:
        rpc = {"jsonrpc": "2.0"}
        _send(send, {**rpc, "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1, "clientCapabilities": {}}})
        _read_reply(read, 1)
        _send(send, {**rpc, "id": 2, "method": "session/new", "params": {
            "cwd": str(ws.root), "mcpServers": []}})
        session = _read_reply(read, 2)["result"]["sessionId"]
        _send(send, {**rpc, "id": 3, "method": "session/prompt", "params": {
            "sessionId": session, "prompt": [
                {"type": "text", "text": "run it"},
                {"type": "resource_link", "name": "g",
                 "uri": f"file://{ws.root}/g.agraph.yaml"}]}})
        for line in read:
            message = json.loads(line)
            if message.get("method") == "session/request_permission":
                _send(send, {**rpc, "id": message["id"], "result": {"outcome": {
                    "outcome": "selected", "optionId": "allow_once"}}})
            elif message.get("id") == 3:  # the prompt's answer: the turn is over
                return


SURFACES: tuple[Surface, ...] = (Run(), Resume(), Accept(), Submit(), Serve(), AppServer(),
                                 Acp())


def _send(stream: IO[str], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


def _read_reply(stream: IO[str], request_id: int) -> dict[str, Any]:
    for line in stream:
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return dict(message)
    raise AssertionError(f"no reply to request {request_id}")


def _close(proc: subprocess.Popen[str]) -> None:
    """Close what the test holds open and wait for the process to end."""
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass  # it died with data unread
        proc.stdin = None
    proc.wait(timeout=120)


def _pause() -> None:
    """The interval between two looks at another process's progress."""
    select.select([], [], [], 0.01)


def signal_at(proc: subprocess.Popen[str], ws: Workspace, point: str,
              sig: signal.Signals) -> bool:
    """Wait for ``point`` of the work and send ``sig``; whether it landed mid-work."""
    for _ in range(LOOKS):
        if ws.reached(point) or proc.poll() is not None:
            break
        _pause()
    landed = proc.poll() is None and ws.reached(point)
    if landed:
        proc.send_signal(sig)
    return landed


def finish(ws: Workspace, run_id: str) -> str:
    """``rein resume`` until the run ends; its status."""
    for _ in range(4):
        done = ws.rein("resume", run_id)
        if done.returncode in (0, 1):
            break
    return ws.status(run_id)


__all__ = ["LOOKS", "POINTS", "SIGNALS", "SURFACES", "Surface", "Workspace", "finish",
           "graph", "signal_at"]
