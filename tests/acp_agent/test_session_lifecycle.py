"""``session/resume``, ``session/close`` and ``session/delete`` (stable in the ACP schema):
a resumed session sends no history and takes the next prompt, a closed one is gone from
this process but loads again, a deleted one leaves ``session/list``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acp_agent.client import Recorder, acp, agent_args, schema, spawn, start
from tests.appserver.serve import environment, reply, workspace


def test_resume_sends_no_history_and_the_session_takes_the_next_prompt(tmp_path: Path
                                                                       ) -> None:
    root = workspace(tmp_path, [reply("first"), reply("second")], position="conversation")
    first = Recorder(lambda call, options: "allow_once")

    async def talk() -> str:
        async with spawn(root, first) as (conn, _proc):
            session = await start(conn, root)
            await conn.prompt(session_id=session, prompt=[acp.text_block("one")])
            return session

    session = asyncio.run(talk())
    assert first.text() == "first"
    second = Recorder(lambda call, options: "allow_once")

    async def resume() -> tuple[Any, int, Any]:
        async with spawn(root, second) as (conn, _proc):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            resumed = await conn.resume_session(cwd=str(root), session_id=session,
                                                mcp_servers=[])
            sent = len(second.updates)
            done = await conn.prompt(session_id=session, prompt=[acp.text_block("two")])
            return init, sent, (resumed, done)

    init, sent, (resumed, done) = asyncio.run(resume())
    caps = init.agent_capabilities.session_capabilities
    assert caps.resume is not None and caps.close is not None and caps.delete is not None
    assert sent == 0  # no history: the client has it
    assert resumed.modes.current_mode_id == "workspace-write"
    assert done.stop_reason == "end_turn" and second.text() == "second"


def test_close_ends_the_session_here_and_load_brings_it_back(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("first")], position="conversation")
    recorder = Recorder(lambda call, options: "allow_once")

    async def run() -> tuple[str, Any, Any]:
        async with spawn(root, recorder) as (conn, _proc):
            session = await start(conn, root)
            await conn.prompt(session_id=session, prompt=[acp.text_block("one")])
            closed = await conn.close_session(session_id=session)
            with pytest.raises(acp.RequestError) as refused:
                await conn.prompt(session_id=session, prompt=[acp.text_block("two")])
            await conn.load_session(cwd=str(root), session_id=session, mcp_servers=[])
            return session, closed, refused.value

    _session, closed, refused = asyncio.run(run())
    assert closed is not None
    assert refused.code == -32602 and "unknown session" in str(refused)
    # loaded again after the close: the history is replayed
    assert recorder.text() == "firstfirst"


def test_delete_takes_the_session_off_the_list(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    proc = subprocess.Popen((sys.executable, *agent_args(root)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**environment(root), "PATH": "/usr/bin:/bin"}, cwd=root)
    assert proc.stdin is not None and proc.stdout is not None

    def call(ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method,
                                     "params": params}).encode() + b"\n")
        proc.stdin.flush()
        for _ in range(100):  # updates may come first; the answer carries our id
            message = json.loads(proc.stdout.readline())
            if message.get("id") == ident:
                return message
        raise AssertionError(f"no answer to {method}")

    try:
        call(1, "initialize", {"protocolVersion": 1})
        kept = call(2, "session/new", {"cwd": str(root), "mcpServers": []})["result"]
        gone = call(3, "session/new", {"cwd": str(root), "mcpServers": []})["result"]
        deleted = call(4, "session/delete", {"sessionId": gone["sessionId"]})
        listed = call(5, "session/list", {})["result"]["sessions"]
        unknown = call(6, "session/delete", {"sessionId": "nope"})
        bad = call(7, "session/delete", {})
        prompt = call(8, "session/prompt", {"sessionId": gone["sessionId"],
                                            "prompt": [{"type": "text", "text": "hi"}]})
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert deleted == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert [s["sessionId"] for s in listed] == [kept["sessionId"]]
    assert unknown["error"]["data"]["code"] == "THREAD404"
    assert bad["error"]["code"] == -32602
    assert prompt["error"]["code"] == -32602  # closed here by the delete
    assert schema.DeleteSessionResponse.model_validate(deleted["result"]) is not None
