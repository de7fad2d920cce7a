"""``session/load`` in a second ``rein acp`` after the first was SIGKILLed mid-turn: the
history is replayed as the same updates, and the unfinished turn asks its question again
and completes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import reply, shell, workspace


def test_load_after_sigkill_replays_the_updates_and_finishes_the_turn(tmp_path: Path) -> None:
    # One conversation per script position: the second process's provider continues it.
    root = workspace(tmp_path, [shell("echo one"), reply("ran one")], position="conversation")
    proc: dict[str, Any] = {}

    def kill(call: Any, options: list[Any]) -> str:
        os.kill(proc["pid"], signal.SIGKILL)  # while the turn waits for this answer
        return "allow_once"

    first = Recorder(kill)

    async def crash() -> str:
        async with spawn(root, first) as (conn, process):
            proc["pid"] = process.pid
            session = await start(conn, root)
            with contextlib.suppress(Exception):  # the agent dies under the prompt
                await conn.prompt(session_id=session, prompt=[acp.text_block("run echo one")])
            await process.wait()
            return session

    session = asyncio.run(crash())
    # the call, pending while its permission is asked (when the agent died)
    assert [(u["sessionUpdate"], u["status"]) for u in first.updates] == [
        ("tool_call", "pending")]

    second = Recorder(lambda call, options: "allow_once")
    finished = asyncio.Event()

    async def reply_seen(session_id: str, update: Any, **kwargs: Any) -> None:
        await Recorder.session_update(second, session_id, update)
        if "ran one" in second.text():
            finished.set()

    second.session_update = reply_seen  # type: ignore[method-assign]

    async def load() -> int:
        async with spawn(root, second) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            loaded = await conn.load_session(cwd=str(root), session_id=session,
                                             mcp_servers=[])
            replayed = len(second.updates)
            assert loaded.modes.current_mode_id == "workspace-write"
            await asyncio.wait_for(finished.wait(), timeout=60)
            return replayed

    replayed = asyncio.run(load())
    history = second.updates[:replayed]
    assert history[0] == {"sessionUpdate": "user_message_chunk",
                          "content": {"type": "text", "text": "run echo one"}}
    # the same updates, folded from the store (the question is asked again, live)
    assert history[1:] == first.updates
    assert len(second.asked) == 1 and second.asked[0]["title"] == first.asked[0]["title"]
    [call] = second.calls()
    assert (call["title"], call["status"]) == ("echo one", "completed")
    assert call["toolCallId"] == first.updates[0]["toolCallId"]
