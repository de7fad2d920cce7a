"""The client's ``mcpServers`` (a real stdio server, mcp-server-time): each launch is a
permission request showing the command, its arguments and its variables' names, bound to
their digest; the servers' tools are offered under rein.toml's policy; the servers stop
with the session; a declined launch starts nothing."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from rein.store.sqlite import SQLiteStore
from tests.acp_agent.client import Recorder, acp, schema, spawn

pytest.importorskip("mcp_server_time", reason="mcp-server-time is not installed "
                                              "(pip install -e '.[test]')")

from tests.appserver.serve import reply, workspace

ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
NOW = {"tool_calls": [{"name": "mcp__time__get_current_time",
                       "arguments": {"timezone": "UTC"}}]}


def servers_with(mark: str) -> list[Any]:
    return [schema.McpServerStdio(name="time", command=sys.executable, args=ARGS,
                                  env=[schema.EnvVariable(name="REIN_TEST_MARK", value=mark)])]


def running(mark: str) -> int:
    """How many processes of this machine have ``REIN_TEST_MARK=mark`` in their
    environment (the server rein launched, and nothing else has it)."""
    count = 0
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        count += f"REIN_TEST_MARK={mark}".encode() in environ.split(b"\0")
    return count


def session(root: Path, seen: Recorder, mark: str) -> tuple[list[str], int, int]:
    """One prompt with the client's server; the stop reasons, and how many server
    processes ran during the session and after it."""
    async def main() -> tuple[list[str], int]:
        async with spawn(root, seen) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            new = await conn.new_session(cwd=str(root), mcp_servers=servers_with(mark))
            done = await conn.prompt(session_id=new.session_id,
                                     prompt=[acp.text_block("what time is it?")])
            return [done.stop_reason], running(mark)

    stops, during = asyncio.run(main())
    return stops, during, running(mark)


def answer(launch: str) -> Any:
    def decide(call: Any, options: list[Any]) -> str:
        return launch if str(call.tool_call_id).startswith("mcp-launch:") else "allow_once"

    return decide


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return workspace(tmp_path, [NOW, reply("it is now")])


def test_an_approved_launch_offers_the_servers_tools_and_stops_with_the_session(
        root: Path) -> None:
    mark = uuid.uuid4().hex
    seen = Recorder(answer("allow_once"))

    stops, during, after = session(root, seen, mark)

    assert stops == ["end_turn"]
    assert (during, after) == (1, 0)  # launched once, stopped when the client went away
    launch, call = seen.asked
    assert launch["options"] == ["allow_once", "reject_once"]
    assert launch["title"].startswith(
        f"Launch MCP server 'time': {sys.executable} {' '.join(ARGS)} (with REIN_TEST_MARK)"
        " (digest sha256:")
    assert launch["rawInput"]["command"] == sys.executable
    assert launch["rawInput"]["args"] == ARGS
    assert launch["rawInput"]["env"] == ["REIN_TEST_MARK"]  # the name, never the value
    assert launch["rawInput"]["digest"] in launch["title"]
    # The tool is rein.toml's `default` decision (ask): a permission request of its own.
    assert call["picked"] == "allow_once"
    (tool,) = seen.calls()
    assert tool["status"] == "completed"
    assert "UTC" in tool["content"][0]["content"]["text"]
    assert "it is now" in seen.text()
    thoughts = "".join(u["content"]["text"] for u in seen.updates
                       if u["sessionUpdate"] == "agent_thought_chunk")
    assert "time: running (mcp__time__get_current_time" in thoughts
    # The thread records the launch as shown and what came of it.
    [thread] = SQLiteStore(root / ".rein" / "rein.db").list_threads()
    [record] = thread.data["mcpLaunches"]
    assert (record["server"], record["status"], record["variables"]) == (
        "time", "running", ["REIN_TEST_MARK"])
    assert record["digest"] == launch["rawInput"]["digest"]
    assert record["command"] == [sys.executable, *ARGS]
    # The variable's value reached the server alone: not the wire, not the store.
    assert mark not in json.dumps(seen.updates) + json.dumps(seen.asked)
    for stored in (root / ".rein").rglob("*"):
        if stored.is_file():
            assert mark.encode() not in stored.read_bytes(), stored


def test_a_declined_launch_starts_nothing_and_offers_no_tool(root: Path) -> None:
    mark = uuid.uuid4().hex
    seen = Recorder(answer("reject_once"))

    stops, during, after = session(root, seen, mark)

    assert stops == ["end_turn"]
    assert (during, after) == (0, 0)
    assert [a["picked"] for a in seen.asked] == ["reject_once"]  # the tool was never asked
    (tool,) = seen.calls()
    assert tool["status"] == "failed"
    thoughts = "".join(u["content"]["text"] for u in seen.updates
                       if u["sessionUpdate"] == "agent_thought_chunk")
    assert "time: declined" in thoughts
    [thread] = SQLiteStore(root / ".rein" / "rein.db").list_threads()
    assert [r["status"] for r in thread.data["mcpLaunches"]] == ["declined"]


def test_rein_toml_can_keep_a_client_servers_tools_from_the_session(root: Path) -> None:
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[policy]\ndeny_tools = ["mcp/time/**"]\n')
    mark = uuid.uuid4().hex
    seen = Recorder(answer("allow_once"))

    stops, during, _ = session(root, seen, mark)

    assert stops == ["end_turn"] and during == 1
    assert len(seen.asked) == 1  # the launch; the call was refused without asking
    (tool,) = seen.calls()
    assert tool["status"] == "failed"


def test_a_read_only_session_asks_about_a_tool_rein_toml_allows(tmp_path: Path) -> None:
    root = workspace(tmp_path, [NOW, reply("first"), NOW, reply("second")])
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[policy]\ndefault = "allow"\n')
    seen = Recorder(answer("allow_once"))

    async def main() -> None:
        async with spawn(root, seen) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            new = await conn.new_session(cwd=str(root),
                                         mcp_servers=servers_with(uuid.uuid4().hex))
            for mode in ("workspace-write", "read-only"):
                await conn.set_session_mode(session_id=new.session_id, mode_id=mode)
                await conn.prompt(session_id=new.session_id,
                                  prompt=[acp.text_block("what time is it?")])

    asyncio.run(main())
    # The launch, then only the read-only turn's call: the first ran as rein.toml allows.
    launch, asked = seen.asked
    assert launch["toolCallId"] == "mcp-launch:time"
    first, second = seen.calls()
    assert first["status"] == second["status"] == "completed"
    assert asked["toolCallId"] == second["toolCallId"]
