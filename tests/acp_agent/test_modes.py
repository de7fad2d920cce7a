"""``session/set_mode`` narrows what a tool may do: the same file write succeeds under
workspace-write and is refused under read-only, and no mode widens rein.toml."""

from __future__ import annotations

import asyncio
from pathlib import Path

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


def test_a_session_needs_an_absolute_cwd_and_no_client_mcp_servers(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    seen = Recorder(lambda call, options: None)

    async def main() -> list[str]:
        errors = []
        async with spawn(root, seen) as (conn, _proc):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            for cwd, servers in (("relative", []), (str(root), [acp.schema.McpServerStdio(
                    name="files", command="mcp-files", args=[], env=[])])):
                try:
                    await conn.new_session(cwd=cwd, mcp_servers=servers)
                except acp.RequestError as exc:
                    errors.append(str(exc.data))
        return errors

    relative, mcp = asyncio.run(main())
    assert "absolute" in relative
    assert "files" in mcp and "rein.toml" in mcp
