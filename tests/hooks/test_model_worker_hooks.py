"""Hooks at the model worker's call sites, with the scripted provider: session context,
skip, stop, replaced output, the approval queue, profile bindings, and compaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rein.config import Config
from rein.core.failures import FailureClass
from rein.providers.scripted import ScriptedProvider
from rein.tools.hooks import Hook, HookRunner, configured_hooks
from rein.workers.base import ItemKind
from rein.workers.hook_calls import profile_hooks
from rein.workers.model import ModelWorker
from tests.workers.test_model import attempt, drive, submit, write_call


def worker(provider: ScriptedProvider, *hooks: Hook, **kw: Any) -> ModelWorker:
    return ModelWorker(provider=provider, model="scripted", hooks=hooks, **kw)


def answer(event: str, **fields: Any) -> str:
    """A hook that prints one JSON answer."""
    body = {"hookSpecificOutput": {"hookEventName": event, **fields}}
    return f"echo '{json.dumps(body)}'"


def test_session_start_context_joins_the_brief(tmp_path: Path) -> None:
    provider = ScriptedProvider([submit(summary="done")])
    rules = Hook(name="rules", command="echo 'House rule: tabs, not spaces.'",
                 events=("SessionStart",))
    items, result = drive(worker(provider, rules), attempt(tmp_path))
    assert result.failure is None
    first = provider.requests[0].messages[0].content
    assert first.endswith("[context from hooks]\nHouse rule: tabs, not spaces.")
    # the trace shows what the model was told beyond the graph
    assert [i.data for i in items if i.kind is ItemKind.HOOK_PROMPT] == [
        {"text": "House rule: tabs, not spaces."}]
    assert [r["eventName"] for r in result.extra["x-rein-hooks"]] == ["SessionStart"]


def test_a_skip_returns_the_hooks_result_and_runs_nothing(tmp_path: Path) -> None:
    provider = ScriptedProvider([write_call(), submit(summary="done")])
    cache = Hook(name="cache", command=answer("PreToolUse", skipResult="NOTE.md is current"),
                 events=("PreToolUse",), matcher="file_write")
    items, result = drive(worker(provider, cache), attempt(tmp_path))
    assert result.failure is None and not (tmp_path / "NOTE.md").exists()
    returned = next(i.data for i in items if i.kind is ItemKind.TOOL_RESULT)
    assert returned == {"id": returned["id"], "ok": True, "refused": False, "hook": "cache",
                        "content": "NOTE.md is current"}
    tool_message = provider.requests[1].messages[-1]
    assert tool_message.role == "tool" and tool_message.content == "NOTE.md is current"


def test_continue_false_ends_the_attempt_and_session_end_still_runs(tmp_path: Path) -> None:
    log = tmp_path / "end.json"
    stop = Hook(name="quota", command="echo '{\"continue\": false, \"stopReason\": \"quota\"}'",
                events=("PreToolUse",))
    end = Hook(name="end", command=f"cat > {log}", events=("SessionEnd",))
    _, result = drive(worker(ScriptedProvider([write_call()]), stop, end), attempt(tmp_path))
    assert result.failure is FailureClass.PERMISSION_DENIED
    assert result.message == "hook quota stopped the session: quota"
    assert json.loads(log.read_text())["reason"] == "permission_denied"
    assert not (tmp_path / "NOTE.md").exists()


def test_post_tool_use_replaces_what_the_model_reads(tmp_path: Path) -> None:
    provider = ScriptedProvider([write_call(), submit(summary="done")])
    swap = Hook(name="swap", command=answer("PostToolUse", updatedToolOutput="(redacted)"),
                events=("PostToolUse",))
    _, result = drive(worker(provider, swap), attempt(tmp_path))
    assert result.failure is None and (tmp_path / "NOTE.md").exists()
    assert provider.requests[1].messages[-1].content == "(redacted)"


def test_ask_from_a_hook_goes_to_the_approver_even_when_the_policy_allows(
        tmp_path: Path) -> None:
    asked: list[Any] = []

    async def approver(ask: Any) -> str:
        asked.append(ask)
        return "decline"

    provider = ScriptedProvider([write_call(), submit(summary="declined")])
    ask = Hook(name="ask", command=answer("PreToolUse", permissionDecision="ask"),
               events=("PreToolUse",))
    drive(worker(provider, ask, approver=approver), attempt(tmp_path))
    assert [a.tool for a in asked] == ["file_write"]
    assert not (tmp_path / "NOTE.md").exists()
    assert "a person declined" in provider.requests[1].messages[-1].content


def test_allow_from_a_hook_does_not_bypass_the_permission_check(tmp_path: Path) -> None:
    provider = ScriptedProvider([write_call(path="OTHER.md"), submit(summary="refused")])
    allow = Hook(name="allow", command=answer("PreToolUse", permissionDecision="allow"),
                 events=("PreToolUse",))
    drive(worker(provider, allow), attempt(tmp_path))
    assert not (tmp_path / "OTHER.md").exists()
    assert provider.requests[1].messages[-1].is_error


def big_turn(call: dict[str, Any]) -> dict[str, Any]:
    return {**call, "usage": {"input": 900, "output": 10}}


def test_compaction_runs_pre_compact_then_continues_from_the_summary(tmp_path: Path) -> None:
    log = tmp_path / "compact.json"
    provider = ScriptedProvider([big_turn(write_call()),
                                 {"text": "I wrote NOTE.md; only submitting is left.",
                                  "usage": {"input": 950, "output": 15}},
                                 submit(summary="done")])
    pre = Hook(name="pre", command=f"cat > {log}", events=("PreCompact",))
    items, result = drive(worker(provider, pre, context_tokens=1000), attempt(tmp_path))
    assert result.failure is None
    assert json.loads(log.read_text())["trigger"] == "auto"
    summary_request = provider.requests[1]
    assert summary_request.tools == () and "summary" in summary_request.messages[-1].content
    after = provider.requests[2].messages
    assert len(after) == 2 and after[0].content == provider.requests[0].messages[0].content
    assert after[1].content.endswith("I wrote NOTE.md; only submitting is left.")
    compaction = [i.data for i in items if i.kind is ItemKind.CONTEXT_COMPACTION]
    assert len(compaction) == 1 and compaction[0]["replaced_messages"] == 3
    assert compaction[0]["replaced"][1]["tool_calls"][0]["name"] == "file_write"
    assert result.usage.agent_steps == 3  # the summary is a model call like any other


def test_a_pre_compact_block_keeps_the_conversation(tmp_path: Path) -> None:
    provider = ScriptedProvider([big_turn(write_call()), submit(summary="done")])
    keep = Hook(name="keep", command="echo 'not now' >&2; exit 2", events=("PreCompact",))
    items, result = drive(worker(provider, keep, context_tokens=1000), attempt(tmp_path))
    assert result.failure is None and len(provider.requests) == 2
    assert len(provider.requests[1].messages) == 3
    assert not [i for i in items if i.kind is ItemKind.CONTEXT_COMPACTION]
    assert any(i.data.get("text") == "compaction blocked by hook keep: not now" for i in items)


def test_no_window_or_a_small_conversation_is_never_compacted(tmp_path: Path) -> None:
    provider = ScriptedProvider([big_turn(write_call()), submit(summary="done")])
    drive(worker(provider), attempt(tmp_path))
    assert len(provider.requests) == 2 and len(provider.requests[1].messages) == 3


class Binding:
    def __init__(self, event: str, name: str, params: dict[str, str]) -> None:
        self.event, self.name, self.params = event, name, params


def test_profile_bindings_fire_at_session_boundaries_with_their_params(tmp_path: Path) -> None:
    out = tmp_path / "start.json"
    config = Config(data={"hooks": {"audit": {"command": f"cat > {out}"},
                                    "global": {"command": ["true"], "events": ["PreToolUse"]}}},
                    sources={"hooks.audit": ("/u/rein.toml",), "hooks.global": ("/u/rein.toml",)})
    assert [h.name for h in configured_hooks(config)] == ["global"]  # no events: bound only
    runner = HookRunner.for_config(config, cwd=tmp_path, session_id="s")
    assert [h.name for h in runner.hooks] == ["global"]
    bound = profile_hooks([Binding("on_start", "audit", {"level": "strict"}),
                           Binding("on_start", "missing", {})], config.hooks, "reviewer")
    assert [(h.name, h.events, h.source, h.command) for h in bound] == [
        ("audit", ("SessionStart",), "profile reviewer", f"cat > {out}")]
    drive(worker(ScriptedProvider([submit(summary="done")]), *bound), attempt(tmp_path))
    assert json.loads(out.read_text())["params"] == {"level": "strict"}


def test_the_summary_call_counts_against_the_step_limit(tmp_path: Path) -> None:
    provider = ScriptedProvider([big_turn(write_call()), {"text": "summary"},
                                 submit(summary="done")])
    _, result = drive(worker(provider, context_tokens=1000, max_steps=2), attempt(tmp_path))
    assert len(provider.requests) == 2  # the write, the summary; the limit stops the third
    assert result.failure is not None and "max_agent_steps 2" in str(result.message)
