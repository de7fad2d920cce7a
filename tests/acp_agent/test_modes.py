"""``session/set_mode`` narrows what a tool may do: the same file write succeeds under
workspace-write and is refused under read-only, and no mode widens rein.toml."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from rein.store.sqlite import SQLiteStore
from tests.acp_agent.client import Recorder, acp, spawn
from tests.appserver.serve import reply, workspace


def write(path: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "file_write",
                            "arguments": {"path": path, "content": "hi\n"}}]}


def test_read_only_mode_refuses_a_write_the_default_mode_allowed(tmp_path: Path) -> None:
    root = workspace(tmp_path, [write("a.txt"), reply("wrote a"),
                                write("b.txt"), reply("could not write b")])
    seen = Recorder(lambda call, options: "allow_once")

    async def main() -> list[str]:
        async with spawn(root, seen) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            new = await conn.new_session(cwd=str(root), mcp_servers=[])
            assert new.modes.current_mode_id == "workspace-write"
            assert [m.id for m in new.modes.available_modes] == [
                "read-only", "workspace-write", "danger-full-access"]
            session = new.session_id
            first = await conn.prompt(session_id=session, prompt=[acp.text_block("write a")])
            await conn.set_session_mode(session_id=session, mode_id="read-only")
            second = await conn.prompt(session_id=session,
                                       prompt=[acp.text_block("write b")])
            try:
                await conn.set_session_mode(session_id=session, mode_id="root")
            except acp.RequestError as exc:
                return [first.stop_reason, second.stop_reason, str(exc)]
            return [first.stop_reason, second.stop_reason, ""]

    stops = asyncio.run(main())
    assert stops[:2] == ["end_turn", "end_turn"]
    assert "unknown mode 'root'" in stops[2]
    assert (root / "a.txt").read_text() == "hi\n"
    assert not (root / "b.txt").exists()
    a, b = seen.calls()
    assert (a["kind"], a["status"]) == ("edit", "completed")
    assert a["content"][0] == {"type": "diff", "path": str(root / "a.txt"), "newText": "hi\n"}
    assert (b["kind"], b["status"]) == ("edit", "failed")
    # Why: the read-only turn was not given the tool at all (the engine's grant).
    store = SQLiteStore(root / ".rein" / "rein.db")
    runs = sorted(store.list_runs(), key=lambda r: r.started_at)
    writes = [str(e.payload["data"]["content"]) for r in runs for e in store.events(r.run_id)
              if e.type == "item" and e.payload.get("kind") == "tool_result"
              and "outputs received" not in str(e.payload["data"]["content"])]
    assert len(writes) == 2 and "refused" not in writes[0]
    assert "no tool named 'file_write'" in writes[1]


def test_a_session_needs_an_absolute_cwd_and_launchable_mcp_servers(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    seen = Recorder(lambda call, options: None)
    http = acp.schema.HttpMcpServer(name="web", url="https://mcp.example/", headers=[],
                                    type="http")
    lower = acp.schema.McpServerStdio(name="files", command="mcp-files", args=[], env=[
        acp.schema.EnvVariable(name="token", value="s3cret")])

    async def main() -> list[str]:
        errors = []
        async with spawn(root, seen) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            for cwd, servers in (("relative", []), (str(root), [http]), (str(root), [lower])):
                try:
                    await conn.new_session(cwd=cwd, mcp_servers=servers)
                except acp.RequestError as exc:
                    errors.append(str(exc.data))
        return errors

    relative, remote, variable = asyncio.run(main())
    assert "absolute" in relative
    assert "'web'" in remote and "stdio servers only" in remote
    assert "'token'" in variable and "s3cret" not in variable
    assert seen.asked == []  # refused before anything was asked or launched


def test_mode_and_model_are_config_options(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("small talk"), write("c.txt"), reply("no write")])
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[tiers.advanced]\nprovider = "script"\nmodel = "scripted-big"\n')
    seen = Recorder(lambda call, options: "allow_once")

    async def main() -> tuple[Any, ...]:
        async with spawn(root, seen) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            new = await conn.new_session(cwd=str(root), mcp_servers=[])
            session = new.session_id
            model = await conn.set_config_option(config_id="model", session_id=session,
                                                 value="advanced")
            await conn.prompt(session_id=session, prompt=[acp.text_block("hi")])
            mode = await conn.set_config_option(config_id="mode", session_id=session,
                                                value="read-only")
            await conn.prompt(session_id=session, prompt=[acp.text_block("write c")])
            errors = []
            for option, value in (("model", "frontier"), ("colour", "red")):
                try:
                    await conn.set_config_option(config_id=option, session_id=session,
                                                 value=value)
                except acp.RequestError as exc:
                    errors.append(str(exc.data))
            return new, model, mode, errors

    new, model, mode, errors = asyncio.run(main())
    shown = {o.id: (o.current_value, [c.value for c in o.options])
             for o in new.config_options}
    assert shown == {"mode": ("workspace-write", ["read-only", "workspace-write",
                                                  "danger-full-access"]),
                     "model": ("standard", ["standard", "advanced"])}
    assert [o.current_value for o in model.config_options] == ["workspace-write", "advanced"]
    assert [o.current_value for o in mode.config_options] == ["read-only", "advanced"]
    assert "unknown model 'frontier'" in errors[0] and "standard, advanced" in errors[0]
    assert "unknown config option 'colour'" in errors[1]
    # The model the option chose served the turns after it; read-only kept the write out.
    store = SQLiteStore(root / ".rein" / "rein.db")
    runs = sorted(store.list_runs(), key=lambda r: r.started_at)
    served = [json.dumps([e.payload for e in store.events(r.run_id)]) for r in runs]
    assert len(served) == 2
    assert all("scripted-big" in s and "scripted-1" not in s for s in served)
    assert not (root / "c.txt").exists()
