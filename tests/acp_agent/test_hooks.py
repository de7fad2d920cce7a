"""Hooks fire in ACP sessions too: the runtime's model worker calls them, so a logging
hook from the user's rein.toml sees the shell call an ACP prompt made."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.acp_agent.client import Recorder, acp, spawn, start
from tests.appserver.serve import reply, shell, workspace

LOGGER = '{ cat; echo; } >> "$REIN_PROJECT_DIR/hook-log.jsonl"\n'


def test_a_logging_hook_sees_the_tool_call_of_an_acp_prompt(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo hooked"), reply("done")])
    (root / "log.sh").write_text(LOGGER)
    user = tmp_path / "user.toml"
    user.write_text(f'[hooks.log]\ncommand = "sh {root}/log.sh"\n'
                    'events = ["PreToolUse", "PostToolUse"]\nmatcher = "shell_exec"\n')
    seen = Recorder(lambda call, options: "allow_once")

    async def main() -> str:
        async with spawn(root, seen, REIN_USER_CONFIG=str(user)) as (conn, _proc):
            session = await start(conn, root)
            done = await conn.prompt(session_id=session,
                                     prompt=[acp.text_block("run echo hooked")])
            return str(done.stop_reason)

    assert asyncio.run(main()) == "end_turn"
    logged = [json.loads(line) for line in
              (root / "hook-log.jsonl").read_text().splitlines() if line.strip()]
    assert [e["hook_event_name"] for e in logged] == ["PreToolUse", "PostToolUse"]
    assert all(e["tool_input"]["command"] == "echo hooked" for e in logged)
    assert "hooked" in seen.calls()[0]["content"][0]["content"]["text"]


def test_a_blocking_and_a_rewriting_hook_act_on_an_acp_prompt(tmp_path: Path) -> None:
    from tests.appserver.test_hooks_turn import GUARD, HOOKS, WRAP, write

    root = workspace(tmp_path, [write(".env"), shell("echo one"), reply("done")])
    (root / "guard.sh").write_text(GUARD)
    (root / "wrap.sh").write_text(WRAP)
    user = tmp_path / "user.toml"
    user.write_text(HOOKS.format(root=root))
    seen = Recorder(lambda call, options: "allow_once")

    async def main() -> str:
        async with spawn(root, seen, REIN_USER_CONFIG=str(user)) as (conn, _proc):
            session = await start(conn, root)
            done = await conn.prompt(session_id=session,
                                     prompt=[acp.text_block("save a key, run one")])
            return str(done.stop_reason)

    assert asyncio.run(main()) == "end_turn"
    # The question shows the command as rewritten: what rein checks and runs.
    [asked] = seen.asked
    assert asked["rawInput"]["command"] == "echo wrapped && echo one"
    blocked, ran = seen.calls()
    assert blocked["status"] == "failed" and not (root / ".env").exists()
    assert ran["status"] == "completed"
    assert "wrapped\none" in ran["content"][0]["content"]["text"]
