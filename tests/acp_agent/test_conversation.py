"""The SDK's client side drives ``rein acp`` through a conversation with the scripted
provider: a tool call allowed, one rejected, one cancelled (a cancel is not a decline)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import reply, shell, workspace


def by_command(tool_call: Any, options: list[Any]) -> str | None:
    title = str(tool_call.title)
    if "one" in title:
        return "allow_once"
    if "two" in title:
        return "reject_once"
    return None  # the third: the client cancels the prompt


def test_allowed_rejected_and_cancelled_tool_calls(tmp_path: Path) -> None:
    first = {**shell("echo one"), "text": "let me run it", "usage": {"input": 120,
                                                                     "output": 30}}
    root = workspace(tmp_path, [first, reply("ran one"),
                                shell("echo two"), reply("two was refused"),
                                shell("echo three"), reply("never")], position="calls")
    seen = Recorder(by_command)

    async def main() -> list[str]:
        async with spawn(root, seen) as (conn, _proc):
            session = await start(conn, root)
            stops = []
            for word in ("one", "two", "three"):
                done = await conn.prompt(session_id=session,
                                         prompt=[acp.text_block(f"run echo {word}")])
                stops.append(done.stop_reason)
            return stops

    stops = asyncio.run(main())
    assert stops == ["end_turn", "end_turn", "cancelled"]
    assert [a["picked"] for a in seen.asked] == ["allow_once", "reject_once", None]
    assert seen.asked[0]["options"] == ["allow_once", "allow_always", "reject_once",
                                        "reject_always"]
    # The question shows the call it is about (its kind and input), as the editor drew it.
    assert (seen.asked[0]["kind"], seen.asked[0]["rawInput"]["command"]) == ("execute",
                                                                            "echo one")
    calls = seen.calls()
    assert [(c["kind"], c["title"], c["status"]) for c in calls] == [
        ("execute", "echo one", "completed"), ("execute", "echo two", "failed"),
        ("execute", "echo three", "failed")]
    assert "one" in calls[0]["content"][0]["content"]["text"]
    assert [a["toolCallId"] for a in seen.asked] == [c["toolCallId"] for c in calls]
    assert "ran one" in seen.text() and "two was refused" in seen.text()
    assert "never" not in seen.text()
    assert seen.text().startswith("let me run it")  # the model's text before its call
    # no context window declared: no usage_update (tests/acp_agent/test_usage.py)
    assert "usage_update" not in seen.kinds()
