"""A prompt whose turn's run rein refuses (an executor it cannot use) is answered, with the
error in the agent's message, never left waiting; ``session/load`` replays the same end."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import reply, workspace

REFUSED = "error: SCALE001: [executor] kind 'nonesuch' is not one of in_process, dbos\n"


def test_a_prompt_whose_run_is_refused_ends_with_the_error(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("never said")])
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[executor]\nkind = "nonesuch"\n')
    seen, replayed = Recorder(lambda call, options: None), Recorder(lambda c, o: None)

    async def main() -> list[str]:
        stops = []
        async with spawn(root, seen) as (conn, _proc):
            session = await start(conn, root)
            for text in ("hello", "again"):  # the session stays usable
                done = await asyncio.wait_for(  # bounded: a prompt left waiting fails here
                    conn.prompt(session_id=session, prompt=[acp.text_block(text)]), 60)
                stops.append(done.stop_reason)
        async with spawn(root, replayed) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(root), session_id=session, mcp_servers=[])
        return stops

    assert asyncio.run(main()) == ["end_turn", "end_turn"]
    assert seen.text() == REFUSED * 2
    assert replayed.text() == REFUSED * 2
