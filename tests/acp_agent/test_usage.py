"""``usage_update`` says what ACP means: ``used`` is the tokens of the last model request
(what its context holds), ``size`` the context window rein.toml declares for the session's
tier; with no window declared, no ``usage_update`` is sent (``size`` would be a guess)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import reply, shell, workspace


def run(root: Path) -> Recorder:
    seen = Recorder(lambda call, options: "allow_once")

    async def talk() -> None:
        async with spawn(root, seen) as (conn, _proc):
            session = await start(conn, root)
            await conn.prompt(session_id=session, prompt=[acp.text_block("run it")])

    asyncio.run(talk())
    return seen


def turns() -> list[object]:
    return [{**shell("echo one"), "usage": {"input": 120, "output": 30}},
            {**reply("ran one"), "usage": {"input": 400, "output": 50}}]


def declare_window(root: Path) -> None:
    """The session's tier declares a context window of 200,000 tokens."""
    toml = (root / "rein.toml").read_text()
    (root / "rein.toml").write_text(toml.replace('model = "scripted-1"\n',
                                                 'model = "scripted-1"\n'
                                                 'context_tokens = 200000\n'))


def test_usage_is_the_last_request_out_of_the_declared_window(tmp_path: Path) -> None:
    root = workspace(tmp_path, turns())
    declare_window(root)
    seen = run(root)
    usage = [u for u in seen.updates if u["sessionUpdate"] == "usage_update"]
    assert [(u["used"], u["size"]) for u in usage] == [(150, 200000), (450, 200000)]
    # the session's running total stays in rein's _meta
    assert usage[-1]["_meta"]["rein"]["totalTokens"] == 600


def test_no_usage_update_for_a_request_that_reported_no_tokens(tmp_path: Path) -> None:
    # a server that sends no usage ("usage": null in the scripted provider, a test double)
    # is not a request that used 0 tokens of the window
    root = workspace(tmp_path, [{**shell("echo one"), "usage": None},
                                {**reply("ran one"), "usage": {"input": 400, "output": 50}}])
    declare_window(root)
    seen = run(root)
    usage = [u for u in seen.updates if u["sessionUpdate"] == "usage_update"]
    assert [(u["used"], u["size"]) for u in usage] == [(450, 200000)]


def test_no_usage_update_without_a_declared_window(tmp_path: Path) -> None:
    seen = run(workspace(tmp_path, turns()))
    assert "ran one" in seen.text()
    assert "usage_update" not in seen.kinds()
