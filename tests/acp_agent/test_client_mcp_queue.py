"""A client's MCP server launch is an entry of rein's approval queue while the editor is
asked: ``rein approvals list`` shows it with its digest and command line, an answer from
``rein approvals accept|decline`` (another process) holds and the editor's question is
dropped, and an answer on the wire is recorded in the queue."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from rein.store.sqlite import SQLiteStore
from tests.acp_agent.client import Recorder, acp, environment, schema, spawn

pytest.importorskip("mcp_server_time", reason="mcp-server-time is not installed "
                                              "(pip install -e '.[test]')")

from tests.acp_agent.test_client_mcp import ARGS, NOW, answer, running, servers_with
from tests.appserver.serve import reply, workspace


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from rein.cli import run; sys.exit(run())",
         *args, "--workspace", str(root)], capture_output=True, text=True, timeout=120,
        env={**os.environ, **environment(root)}, cwd=root, check=False)


class Elsewhere(Recorder):
    """An editor whose launch dialog stays open while a person answers in rein's queue
    from a terminal; it answers the opposite late, which must not count."""

    def __init__(self, root: Path, verb: str) -> None:
        super().__init__(answer("allow_once"))
        self.root, self.verb = root, verb
        self.listed: dict[str, Any] = {}
        self.shown = self.text = ""
        self.moot: asyncio.Event | None = None
        self.dialog: asyncio.Task[Any] | None = None  # the task that answers the launch question

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await super().session_update(session_id, update, **kwargs)
        if getattr(update, "tool_call_id", "").startswith("mcp-launch:") and \
                self.moot is not None:
            self.moot.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> schema.RequestPermissionResponse:
        if not str(tool_call.tool_call_id).startswith("mcp-launch:"):
            return await super().request_permission(session_id, tool_call, options)
        self.moot = asyncio.Event()
        self.dialog = asyncio.current_task()
        approval = tool_call.raw_input["approval"]
        listed = _cli(self.root, "approvals", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        self.listed = {"stdout": listed.stdout, "call": tool_call.model_dump(by_alias=True),
                       "entries": json.loads(listed.stdout)["approvals"]}
        self.text = _cli(self.root, "approvals", "list").stdout
        shown = _cli(self.root, "approvals", "show", approval)
        assert shown.returncode == 0, shown.stderr
        self.shown = shown.stdout
        answered = _cli(self.root, "approvals", self.verb, approval)
        assert answered.returncode == 0, answered.stderr
        # The agent says it was answered. (Not asyncio.wait_for: on Python 3.11 it returns
        # instead of raising when it is cancelled as the event is set.)
        async with asyncio.timeout(60):
            await self.moot.wait()
        late = "reject_once" if self.verb == "accept" else "allow_once"
        self.asked.append({"toolCallId": tool_call.tool_call_id, "picked": late})
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=late))


def _run(root: Path, seen: Recorder, mark: str) -> tuple[str, int, int]:
    async def main() -> tuple[str, int]:
        async with spawn(root, seen) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            new = await conn.new_session(cwd=str(root), mcp_servers=servers_with(mark))
            done = await conn.prompt(session_id=new.session_id,
                                     prompt=[acp.text_block("what time is it?")])
            if isinstance(seen, Elsewhere) and seen.dialog is not None:
                # The prompt may end while the dialog still waits to answer late: the late
                # answer goes out before the client closes, not cancelled by the close.
                await asyncio.wait({seen.dialog})
            return str(done.stop_reason), running(mark)

    stop, during = asyncio.run(main())
    return stop, during, running(mark)


def _launch(root: Path) -> tuple[Any, dict[str, Any]]:
    """The queue's one entry, and the thread's record of the launch."""
    store = SQLiteStore(root / ".rein" / "rein.db")
    [row] = [r for r in store.approvals() if r.kind.value == "mcp_launch"]
    [thread] = store.list_threads()
    [record] = thread.data["mcpLaunches"]
    return row, record


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return workspace(tmp_path, [NOW, reply("it is now")])


def test_the_launch_waits_in_the_queue_and_an_accept_from_the_cli_launches_it(
        root: Path) -> None:
    mark = uuid.uuid4().hex
    seen = Elsewhere(root, "accept")

    stop, during, after = _run(root, seen, mark)

    # While the editor's question waited, the queue held the launch as shown.
    [entry] = seen.listed["entries"]  # nothing else waits yet
    call = seen.listed["call"]
    assert entry["approval_id"] == call["rawInput"]["approval"]
    assert (entry["kind"], entry["status"]) == ("mcp_launch", "pending")
    assert entry["digest"] == call["rawInput"]["digest"]
    assert entry["digest"] in call["title"]
    assert entry["request"]["command"] == [sys.executable, *ARGS]
    assert entry["request"]["variables"] == ["REIN_TEST_MARK"]
    assert entry["request"]["prompt"] == call["title"]
    assert mark not in seen.listed["stdout"]  # the names, never the values
    assert f"launches MCP server 'time': {sys.executable} {' '.join(ARGS)}" in seen.shown
    assert "no run" in seen.shown and "REIN_TEST_MARK" in seen.shown
    assert f"mcp_launch time  {call['title']}" in seen.text
    assert f"    thread {entry['run_id']}" in seen.text  # the session's thread: no run
    # The accept from the terminal held: the server ran and its tool was offered.
    assert stop == "end_turn"
    assert (during, after) == (1, 0)
    (tool,) = seen.calls()[1:]  # after the launch's own (moot) update
    assert tool["status"] == "completed"
    assert "UTC" in tool["content"][0]["content"]["text"]
    moot = next(c for c in seen.calls() if c["toolCallId"] == "mcp-launch:time")
    assert moot["status"] == "completed"
    assert "accepted in rein's approval queue" in moot["title"]
    row, record = _launch(root)
    assert [a["picked"] for a in seen.asked
            if a["toolCallId"] == "mcp-launch:time"] == ["reject_once"]  # given, and sent
    assert row.status.value == "accepted"  # the editor's late reject did not count
    assert (record["status"], record["approval"]) == ("running", row.approval_id)


def test_a_decline_from_the_cli_starts_nothing(root: Path) -> None:
    mark = uuid.uuid4().hex
    seen = Elsewhere(root, "decline")

    stop, during, after = _run(root, seen, mark)

    assert seen.listed["entries"][0]["status"] == "pending"
    assert stop == "end_turn"
    assert [a["picked"] for a in seen.asked
            if a["toolCallId"] == "mcp-launch:time"] == ["allow_once"]  # given, and sent
    assert (during, after) == (0, 0)  # the editor's late allow did not count
    moot, tool = seen.calls()
    assert moot["toolCallId"] == "mcp-launch:time" and moot["status"] == "failed"
    assert tool["status"] == "failed"  # no server: the tool is unknown
    row, record = _launch(root)
    assert row.status.value == "declined"
    assert record["status"] == "declined"


@pytest.mark.parametrize(("picked", "status", "ran"), [
    ("allow_once", "accepted", 1), ("reject_once", "declined", 0)])
def test_an_answer_on_the_wire_is_the_queue_entrys_answer(
        root: Path, picked: str, status: str, ran: int) -> None:
    mark = uuid.uuid4().hex
    seen = Recorder(answer(picked))

    stop, during, _ = _run(root, seen, mark)

    assert stop == "end_turn" and during == ran
    row, record = _launch(root)
    assert row.approval_id == seen.asked[0]["rawInput"]["approval"]
    assert row.status.value == status
    assert row.answer is not None and row.answer["note"] == "session/request_permission"
    assert row.digest == seen.asked[0]["rawInput"]["digest"] == record["digest"]
    assert row.request["turn"] and row.request["thread"] == row.run_id
    listed = _cli(root, "approvals", "list", "--all", "--json")
    assert [(a["approval_id"], a["status"]) for a in json.loads(listed.stdout)["approvals"]
            if a["kind"] == "mcp_launch"] == [(row.approval_id, status)]


def test_a_withdrawn_launch_question_is_a_cancel_not_a_decline(root: Path) -> None:
    mark = uuid.uuid4().hex
    seen = Recorder(lambda call, options: None if str(call.tool_call_id).startswith(
        "mcp-launch:") else "allow_once")

    stop, during, after = _run(root, seen, mark)

    # The client sends session/cancel, then withdraws the question: the prompt ends
    # cancelled (ACP), even when the scripted model's instant reply ends the turn before the
    # cancel reaches its run; the launch is a cancel, and nothing ran.
    assert stop == "cancelled"
    assert (during, after) == (0, 0)
    row, _ = _launch(root)
    assert row.status.value == "cancelled"


class Both(Recorder):
    """Asked about the first launch, a person answers the second one in the queue from a
    terminal, then the first one in the editor."""

    def __init__(self, root: Path) -> None:
        super().__init__(answer("allow_once"))
        self.root = root
        self.pending: list[tuple[str, str]] = []

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> schema.RequestPermissionResponse:
        if tool_call.tool_call_id == "mcp-launch:time":
            listed = json.loads(_cli(self.root, "approvals", "list", "--json").stdout)
            self.pending = [(a["request"]["server"], a["approval_id"])
                            for a in listed["approvals"]]
            accepted = _cli(self.root, "approvals", "accept", dict(self.pending)["clock"])
            assert accepted.returncode == 0, accepted.stderr
        return await super().request_permission(session_id, tool_call, options)


def test_every_launch_is_queued_at_once_and_one_answered_there_is_not_asked_again(
        root: Path) -> None:
    mark = uuid.uuid4().hex
    seen = Both(root)
    servers = [*servers_with(mark), schema.McpServerStdio(
        name="clock", command=sys.executable, args=ARGS,
        env=[schema.EnvVariable(name="REIN_TEST_MARK", value=mark)])]

    async def main() -> int:
        async with spawn(root, seen) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            new = await conn.new_session(cwd=str(root), mcp_servers=servers)
            await conn.prompt(session_id=new.session_id,
                              prompt=[acp.text_block("what time is it?")])
            return running(mark)

    during = asyncio.run(main())

    assert [server for server, _ in seen.pending] == ["time", "clock"]
    assert [a["toolCallId"] for a in seen.asked if a["toolCallId"].startswith(
        "mcp-launch:")] == ["mcp-launch:time"]  # the clock's was answered in the queue
    assert during == 2
    store = SQLiteStore(root / ".rein" / "rein.db")
    answered = {r.request["server"]: (r.status.value, (r.answer or {}).get("note"))
                for r in store.approvals() if r.kind.value == "mcp_launch"}
    assert answered == {"time": ("accepted", "session/request_permission"),
                        "clock": ("accepted", None)}


class Holds(Recorder):
    """An editor that never answers a launch question (until the test lets it go)."""

    def __init__(self) -> None:
        super().__init__(answer("allow_once"))
        self.asked_launch: asyncio.Event | None = None

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> schema.RequestPermissionResponse:
        if str(tool_call.tool_call_id).startswith("mcp-launch:"):
            assert self.asked_launch is not None
            self.asked_launch.set()
            await asyncio.Event().wait()  # cancelled when the client closes
        return await super().request_permission(session_id, tool_call, options)


@pytest.mark.parametrize("gone", ["closed", "killed"])
def test_a_launch_left_waiting_is_cancelled_and_a_loaded_session_asks_again(
        root: Path, gone: str) -> None:
    mark = uuid.uuid4().hex
    first = Holds()

    async def leave() -> str:
        async with spawn(root, first) as (conn, proc):
            first.asked_launch = asyncio.Event()
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            new = await conn.new_session(cwd=str(root), mcp_servers=servers_with(mark))
            prompt = asyncio.ensure_future(conn.prompt(
                session_id=new.session_id, prompt=[acp.text_block("what time is it?")]))
            await first.asked_launch.wait()
            if gone == "killed":
                proc.kill()
                await proc.wait()
            prompt.cancel()
            return str(new.session_id)  # the client goes away with the question open

    session_id = asyncio.run(leave())
    store = SQLiteStore(root / ".rein" / "rein.db")
    [left] = [r for r in store.approvals() if r.kind.value == "mcp_launch"]
    # A closed session withdraws its question; a killed process cannot, and the session
    # served again does.
    assert left.status.value == ("cancelled" if gone == "closed" else "pending")

    second = Recorder(answer("allow_once"))

    async def load() -> int:
        async with spawn(root, second) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(root), session_id=session_id,
                                    mcp_servers=servers_with(mark))
            await conn.prompt(session_id=session_id,
                              prompt=[acp.text_block("what time is it?")])
            return running(mark)

    assert asyncio.run(load()) == 1
    rows = [r for r in store.approvals() if r.kind.value == "mcp_launch"]
    assert [(r.status.value, r.digest) for r in rows] == [
        ("cancelled", left.digest), ("accepted", left.digest)]
    assert (rows[0].answer or {}).get("actor") == "rein"  # nobody answered it: rein did
