"""A tool call opens ``pending`` and stays so while its permission is asked (ACP: "not
started yet ... awaiting approval"): it is never said to run before it is allowed; it goes
``in_progress`` once allowed, and ends ``completed``. A call nobody is asked about goes from
``pending`` to its end."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import reply, shell, workspace


def test_a_call_is_pending_while_its_permission_is_asked(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo one"), reply("ran one")], position="calls")
    seen = Recorder(lambda _call, _options: "allow_once")

    async def main() -> Any:
        async with spawn(root, seen) as (conn, _proc):
            session = await start(conn, root)
            return await conn.prompt(session_id=session,
                                     prompt=[acp.text_block("run echo one")])

    assert asyncio.run(main()).stop_reason == "end_turn"
    [asked] = seen.asked
    assert asked["statusShown"] == "pending"
    statuses = [u.get("status") for u in seen.updates
                if u.get("toolCallId") == asked["toolCallId"] and u.get("status")]
    # Announced pending, held so while asked, running once allowed, done.
    assert statuses == ["pending", "in_progress", "completed"]


def test_a_call_nobody_is_asked_about_is_never_said_to_wait_for_a_person(tmp_path: Path
                                                                          ) -> None:
    root = workspace(tmp_path, [shell("echo one"), reply("ran one")], position="calls")
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[policy]\nshell = "allow"\n')
    seen = Recorder(lambda _call, _options: "reject_once")

    async def main() -> Any:
        async with spawn(root, seen) as (conn, _proc):
            session = await start(conn, root)
            return await conn.prompt(session_id=session,
                                     prompt=[acp.text_block("run echo one")])

    assert asyncio.run(main()).stop_reason == "end_turn"
    assert seen.asked == []
    statuses = [u.get("status") for u in seen.updates if u.get("status")
                and u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert statuses == ["pending", "completed"]
