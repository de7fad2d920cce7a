"""An answer an editor gives over ACP (``session/request_permission``) records that surface
and how the identity was established, as every answer does."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rein.store.sqlite import SQLiteStore
from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import reply, shell, workspace


def test_an_allowed_tool_call_records_the_acp_surface(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo one"), reply("ran one")], position="calls")
    seen = Recorder(lambda _call, _options: "allow_once")

    async def main() -> Any:
        async with spawn(root, seen) as (conn, _proc):
            session = await start(conn, root)
            return await conn.prompt(session_id=session,
                                     prompt=[acp.text_block("run echo one")])

    assert asyncio.run(main()).stop_reason == "end_turn"
    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        [row] = [a for a in store.approvals() if a.kind.value == "tool_call"]
    finally:
        store.close()
    assert row.status.value == "accepted" and row.answer is not None
    given = row.answer["given"]
    assert (given["surface"], given["confined"]) == ("acp", False)
    assert given["identity"]["method"] == "os-user"
