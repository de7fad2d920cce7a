"""A profile session's own tools: notes whose evidence rein checks itself, memory within the
granted mode and scopes, notes rebuilt from a resumed conversation, and MCP servers stopped
when the session is cancelled."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp.client.stdio  # noqa: F401 - bind the SDK's stderr default at collection time
import pytest

from rein.config import load_config
from rein.core.usage import Budget
from rein.profiles.memory import MemoryStore
from rein.providers.types import Message, ModelRequest, ModelToolCall
from rein.workers.base import AttemptRequest, AttemptResult, OutputSpec
from rein.workers.model import ModelWorker
from rein.workers.profile import ProfileWorker
from rein.workers.profile_mcp import trusted_launches
from rein.workers.session_tools import (
    MEMORY_RECALL,
    MEMORY_REMEMBER,
    NOTE_LEARNING,
    SessionTools,
)
from tests.scenarios.model_env import isolate

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def tools(tmp_path: Path, mode: str = "read_write") -> SessionTools:
    store = MemoryStore(name="notes", path=tmp_path / "notes.json", mode=mode,
                        scopes=("project:demo",))
    return SessionTools(stores={"notes": store}, material="Fix the build; we use make ci.",
                        source="session t", now=lambda: NOW)


def note(box: SessionTools, **arguments: Any) -> str:
    return asyncio.run(box.run("n", NOTE_LEARNING, arguments)).content


def test_evidence_is_checked_against_the_session_not_taken_on_trust(tmp_path: Path) -> None:
    box = tools(tmp_path)
    box.observe("r1", "Builds run with make ci.", True)
    box.observe("r2", "permission denied", False)
    note(box, kind="fact", text="CI is make ci.",
         evidence=[{"kind": "tool_result", "ref": "r1", "quote": "make ci"}])
    note(box, kind="preference", text="Use make ci.",
         evidence=[{"kind": "user_statement", "ref": "task", "quote": "we use make ci"}])
    answer = note(box, kind="fact", text="Failed call.",
                  evidence=[{"kind": "tool_result", "ref": "r2"}])
    assert answer.startswith("noted, but its evidence does not hold")
    note(box, kind="fact", text="Invented.",
         evidence=[{"kind": "tool_result", "ref": "r1", "quote": "make deploy"}])
    note(box, kind="thread", text="Flaky test in CI", status="open", evidence=[])
    note(box, kind="proposal", path="/spec/tools/allow", value=["shell"], rationale="ci")
    out = box.learning()
    assert [(x.collection, x.text) for x in out.learned] == [("facts", "CI is make ci."),
                                                             ("preferences", "Use make ci.")]
    assert out.learned[0].evidence[0].ref == "tool call r1"
    assert [p.path for p in out.proposals] == ["/spec/tools/allow"]
    assert out.threads == ()
    assert out.skipped == (
        ("fact 'Failed call.': no successful tool call 'r2' in this session; not written "
         "(L2-G5)"),
        "fact 'Invented.': the quote is not in the result of 'r1'; not written (L2-G5)",
        "thread 'Flaky test in CI': no evidence; not written (L2-G5)")


def test_a_bad_note_is_an_error_the_model_can_read(tmp_path: Path) -> None:
    box = tools(tmp_path)
    assert note(box, kind="fact") == ("a note needs kind fact, preference, thread or "
                                      "proposal and a text")
    assert note(box, kind="proposal", path="/state/facts", rationale="x") == (
        "a proposal needs a path under /spec or /metadata and a rationale")
    assert box.learning().proposals == ()


def test_memory_follows_mode_and_scope(tmp_path: Path) -> None:
    box = tools(tmp_path)
    assert [s.name for s in box.specs()] == [MEMORY_RECALL, MEMORY_REMEMBER, NOTE_LEARNING]
    done = asyncio.run(box.run("m", MEMORY_REMEMBER, {"text": "Ship on Thursdays.",
                                                     "scope": "project:demo"}))
    assert done.ok and done.content.startswith("remembered as mem-")
    other = asyncio.run(box.run("m", MEMORY_REMEMBER, {"text": "x", "scope": "user:me"}))
    assert other.refused and "memory scope 'user:me' is not granted" in other.content
    read_only = tools(tmp_path, mode="read_only")
    assert [s.name for s in read_only.specs()] == [MEMORY_RECALL, NOTE_LEARNING]
    recalled = asyncio.run(read_only.run("m", MEMORY_RECALL, {"query": "thursday"}))
    assert "Ship on Thursdays." in recalled.content
    assert recalled.content.startswith('<memory trust="untrusted"')
    refused = asyncio.run(read_only.run("m", MEMORY_REMEMBER, {"text": "y",
                                                               "scope": "project:demo"}))
    assert refused.refused and "read_only" in refused.content
    assert [s.name for s in tools(tmp_path, mode="off").specs()] == [NOTE_LEARNING]


def test_notes_are_rebuilt_from_a_resumed_conversation(tmp_path: Path) -> None:
    noted = ModelToolCall(id="n1", name=NOTE_LEARNING, arguments={
        "kind": "fact", "text": "CI is make ci.",
        "evidence": [{"kind": "tool_result", "ref": "r1", "quote": "make ci"}]},
        raw_arguments="")
    read = ModelToolCall(id="r1", name="file_read", arguments={"path": "README.md"},
                         raw_arguments="")
    messages = [
        Message(role="assistant", content="", tool_calls=(read,)),
        Message(role="tool", tool_call_id="r1", content="Builds run with make ci."),
        Message(role="assistant", content="", tool_calls=(noted,)),
        Message(role="tool", tool_call_id="n1", content="noted"),
    ]
    box = tools(tmp_path)
    box.replay(messages)
    assert [x.text for x in box.learning().learned] == ["CI is make ci."]
    assert SessionTools.counts(NOTE_LEARNING) is False and SessionTools.counts("mcp/a/b")


def test_only_managed_and_user_files_trust_a_launch(tmp_path: Path, monkeypatch) -> None:
    isolate(tmp_path, monkeypatch)
    user = tmp_path / ".home" / ".config" / "rein" / "rein.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[mcp]\ntrusted = ["mcp-server-time"]\n')
    (tmp_path / "rein.toml").write_text('[mcp]\ntrusted = ["evil-server"]\n')
    assert trusted_launches(load_config(tmp_path)) == {"mcp-server-time": str(user)}


PROFILE = f"""\
oap: "1.0"
kind: AgentProfile
metadata:
  name: clock
  description: Tells the time. Use when a node needs the time.
spec:
  role:
    instructions: You tell the time.
  tools:
    policy: allowlist
    allow: ["mcp/time/*"]
    mcp_servers:
      - name: time
        transport: stdio
        command: {sys.executable}
        args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]
"""


class Hanging:
    """A provider test double whose first call never returns: the test cancels it."""

    from rein.providers.types import Capabilities

    capabilities = Capabilities(streaming=False, tool_calling=True)
    name = "hanging"

    def __init__(self) -> None:
        self.entered = asyncio.Event()

    async def complete(self, request: ModelRequest) -> Any:
        self.entered.set()
        await asyncio.Event().wait()


def servers_alive() -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and "mcp_server_time" in cmdline and fields[0] != "Z":
            out.append(int(entry.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_cancelled_session_stops_its_servers(tmp_path: Path, monkeypatch) -> None:
    isolate(tmp_path, monkeypatch)
    user = tmp_path / ".home" / ".config" / "rein" / "rein.toml"
    user.parent.mkdir(parents=True)
    line = f"{sys.executable} -m mcp_server_time --local-timezone UTC"
    user.write_text(f'[mcp]\ntrusted = ["{line}"]\n')
    (tmp_path / "clock.agent.yaml").write_text(PROFILE)
    provider = Hanging()
    worker = ProfileWorker(ModelWorker(provider=provider, model="h"),  # type: ignore[arg-type]
                           workspace=tmp_path, config=load_config(tmp_path))
    request = AttemptRequest(
        run_id="r", node_id="n", attempt=1, kind="task", title="t", brief="b", inputs={},
        outputs=(OutputSpec(name="now", type="string", description="the time"),),
        permissions=(), tools=("mcp/time/get_current_time",), workspace=str(tmp_path),
        profile="clock.agent.yaml", budget=Budget())
    seen: dict[str, list[int]] = {}

    async def drive() -> None:
        async for out in worker.run(request):
            assert not isinstance(out, AttemptResult)

    async def main() -> None:
        task = asyncio.create_task(drive())
        await provider.entered.wait()
        seen["during"] = servers_alive()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(seen["during"]) == 1
    assert servers_alive() == []
