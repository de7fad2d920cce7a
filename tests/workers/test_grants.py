"""Effective permissions of an attempt: the node's, narrowed by each ceiling, never widened."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rein.profiles.policy import Policy
from rein.providers.scripted import ScriptedProvider
from rein.tools.permissions import Permission
from rein.workers.base import Answer, AttemptRequest, AttemptResult, OutputSpec, WorkerPaused
from rein.workers.grants import attempt_grants, spellings
from rein.workers.model import SUBMIT, ModelWorker

NODE_TOOLS = ["file_read", "file_write", "shell_exec", "http_fetch"]
NODE_PERMS = ["fs:read:**", "fs:write:**", "shell:exec:pytest*", "net:fetch"]


def test_spellings_cover_both_specs() -> None:
    assert set(spellings("file_write")) == {"file_write", "write"}
    assert spellings("mcp/time/now") == ("mcp/time/now",)


def test_policy_decisions_roots_and_hosts_narrow() -> None:
    policy = Policy.from_mapping({"shell": "deny", "edit": "ask", "write_roots": ["src"],
                                  "allow_hosts": ["api.example.com"],
                                  "deny_tools": ["fetch"]})
    g = attempt_grants(NODE_TOOLS, NODE_PERMS, [("rein.toml", policy)])
    assert g.tools == ("file_read", "file_write", "shell_exec")
    assert g.grants == ("fs:read:**", "fs:write:src/**", "net:fetch:https://api.example.com")
    assert "fs:write" in g.ask and "shell:exec" not in g.ask
    reasons = {(n.get("grant") or n.get("tool")): n["reason"] for n in g.narrowed}
    assert reasons["shell:exec:pytest*"] == "shell: deny"
    assert reasons["http_fetch"] == "not in its tools"


def test_the_default_policy_asks_for_shell_and_network() -> None:
    g = attempt_grants(NODE_TOOLS, NODE_PERMS, [("rein.toml", Policy.from_mapping({}))])
    assert g.grants == tuple(NODE_PERMS)
    assert set(g.ask) == {"shell:exec", "net:fetch"}
    assert "fs:write:.git/**" in g.denied


_TARGETS = st.sampled_from(["**", "src/**", "src/a.py", "docs/*.md", "a.txt", None])
_ROOTS = st.lists(st.sampled_from([".", "src", "docs", "src/sub"]), min_size=1, max_size=2)


@settings(max_examples=60, deadline=None)
@given(targets=st.lists(_TARGETS, min_size=1, max_size=3), roots=_ROOTS,
       path=st.sampled_from(["src/a.py", "docs/x.md", "a.txt", "src/sub/b.py", "other/c"]))
def test_narrowing_never_grants_a_write_the_node_did_not_have(
        targets: list[str | None], roots: list[str], path: str) -> None:
    perms = [f"fs:write:{t}" if t else "fs:write" for t in targets]
    g = attempt_grants(["file_write"], perms,
                       [("p", Policy.from_mapping({"write_roots": roots}))])
    request = Permission(scope="fs", action="write", target=path)
    after = any(Permission.parse(p).covers(request) for p in g.grants)
    before = any(Permission.parse(p).covers(request) for p in perms)
    assert not after or before


class MemorySession:
    """An in-memory AttemptSession (a test double of the engine's)."""

    def __init__(self) -> None:
        self.state: Mapping[str, Any] | None = None
        self.answers: dict[str, Answer] = {}
        self.asked: list[Mapping[str, Any]] = []

    def load_state(self) -> Mapping[str, Any] | None:
        return self.state

    def save_state(self, state: Mapping[str, Any] | None) -> None:
        self.state = state

    async def ask(self, key: str, request: Mapping[str, Any]) -> tuple[str, Answer | None]:
        self.asked.append(request)
        return "apv-1", self.answers.get(key)


def test_the_loop_pauses_on_ask_and_resumes_with_a_fresh_worker(tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "file_write",
                              "arguments": {"path": "a.txt", "content": "hi"}}]},
             {"tool_calls": [{"name": SUBMIT, "arguments": {"summary": "done"}}]}]
    session = MemorySession()
    request = AttemptRequest(
        run_id="r", node_id="n", attempt=1, kind="task", title="t", brief="write a.txt",
        inputs={}, outputs=(OutputSpec(name="summary", type="string", description="d"),),
        permissions=("fs:write:a.txt",), tools=("file_write",), workspace=str(tmp_path),
        workspace_access="read_write", session=session)

    def worker() -> ModelWorker:  # a new process builds a new provider and worker
        return ModelWorker(provider=ScriptedProvider(turns, by_conversation=True), model="s",
                           ask=("fs:write",))

    async def go(w: ModelWorker) -> AttemptResult:
        async for out in w.run(request):
            if isinstance(out, AttemptResult):
                return out
        raise AssertionError("no result")

    try:
        asyncio.run(go(worker()))
        raise AssertionError("expected a pause")
    except WorkerPaused as paused:
        assert paused.reason == "approval" and paused.token == "apv-1"
    assert not (tmp_path / "a.txt").exists()
    assert session.state is not None and session.asked[0]["tool"] == "file_write"
    key = session.asked[0]["action_digest"]
    session.answers[key] = "accept"
    result = asyncio.run(go(worker()))
    assert result.failure is None and result.outputs == {"summary": "done"}
    assert (tmp_path / "a.txt").read_text() == "hi"
    assert result.usage.agent_steps == 2 and result.usage.tool_calls == 1
    assert session.state is None
