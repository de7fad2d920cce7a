"""``allow_always`` and ``reject_always`` are remembered for the session only, and for the
same exact call only: a new session, or another command, is asked again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import reply, shell, workspace


def always(tool_call: Any, options: list[Any]) -> str:
    return "reject_always" if "other" in str(tool_call.title) else "allow_always"


def test_always_answers_hold_for_the_same_call_in_the_same_session(tmp_path: Path) -> None:
    words = ["same", "same", "other", "other", "same"]
    turns = [t for i, w in enumerate(words) for t in (shell(f"echo {w}"), reply(str(i)))]
    root = workspace(tmp_path, turns)
    seen = Recorder(always)

    async def main() -> None:
        async with spawn(root, seen) as (conn, _proc):
            session = await start(conn, root)
            for word in words[:4]:
                await conn.prompt(session_id=session, prompt=[acp.text_block(word)])
            fresh = await conn.new_session(cwd=str(root), mcp_servers=[])
            await conn.prompt(session_id=fresh.session_id, prompt=[acp.text_block("again")])

    asyncio.run(main())
    # Asked: the first "same", the first "other", and "same" in the new session.
    assert [(a["title"].split('"')[3], a["picked"]) for a in seen.asked] == [
        ("echo same", "allow_always"), ("echo other", "reject_always"),
        ("echo same", "allow_always")]
    assert [c["status"] for c in seen.calls()] == [
        "completed", "completed", "failed", "failed", "completed"]
