"""Bad requests get an error that says what is wrong and what to do, never a crash: an
unknown session, a session id no thread has, a prompt with no text."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import workspace


def test_unknown_sessions_and_empty_prompts_are_errors(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    seen = Recorder(lambda call, options: None)

    async def main() -> list[str]:
        errors: list[str] = []
        async with spawn(root, seen) as (conn, _proc):
            session = await start(conn, root)
            calls = [
                conn.prompt(session_id="nope", prompt=[acp.text_block("hi")]),
                conn.load_session(cwd=str(root), session_id="thr-missing", mcp_servers=[]),
                conn.prompt(session_id=session, prompt=[acp.image_block("AAAA", "image/png")]),
            ]
            for call in calls:
                try:
                    await call
                except acp.RequestError as exc:
                    errors.append(f"{exc.code} {exc} {exc.data}")
            # The agent is still there: a good request after the bad ones is answered.
            await conn.set_session_mode(session_id=session, mode_id="read-only")
        return errors

    unknown, missing, empty = asyncio.run(main())
    assert unknown.startswith("-32602") and "unknown session nope" in unknown
    assert "THREAD404" in missing
    assert "THREAD004" in empty and "text" in empty


def test_session_list_gives_the_workspace_threads_newest_first(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    other = tmp_path / "sub"
    other.mkdir()
    seen = Recorder(lambda call, options: None)

    async def main() -> tuple[list[str], list[str], list[str]]:
        async with spawn(root, seen) as (conn, _proc):
            first = await start(conn, root)
            second = (await conn.new_session(cwd=str(other), mcp_servers=[])).session_id
            every = await conn.list_sessions()
            here = await conn.list_sessions(cwd=str(root))
            return [first, second], [s.session_id for s in every.sessions], \
                [s.session_id for s in here.sessions]

    (first, second), every, here = asyncio.run(main())
    assert every == [second, first]
    assert here == [first]
