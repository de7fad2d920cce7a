"""A hook configuration written for Claude Code runs unchanged: Claude Code's tool names
(``Bash``, ``Write``, ``Edit``...) select rein's tools, the inputs come in Claude Code's
shape and a rewrite in that shape is read back, ``transcript_path`` names a readable
transcript, ``defer`` waits for a person and the legacy ``approve`` is refused (HOOK001).
The model is the scripted provider; the hooks are real processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rein.config import HookSpec, load_config
from rein.errors import ConfigError
from rein.providers.scripted import ScriptedProvider
from rein.tools.hooks import Hook, from_spec
from rein.workers.base import ItemKind
from rein.workers.model import ModelWorker
from tests.workers.test_model import attempt, drive, submit, write_call


def worker(provider: ScriptedProvider, *hooks: Hook, **kw: Any) -> ModelWorker:
    return ModelWorker(provider=provider, model="scripted", hooks=hooks, **kw)


def logger(log: Path, **kw: Any) -> Hook:
    """A hook that appends each input it reads to ``log``, one JSON object a line."""
    return Hook(name="log", command=f"{{ cat; echo; }} >> {log}", **kw)


def inputs(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def answer(body: dict[str, Any]) -> str:
    return f"echo '{json.dumps(body)}'"


def edit_call(path: str = "NOTE.md") -> dict[str, Any]:
    return {"tool_calls": [{"name": "edit", "arguments": {
        "path": path, "old": "draft", "new": "final"}}], "usage": {"input": 100, "output": 20}}


def shell_call(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "shell", "arguments": {
        "command": command, "timeout_seconds": 5}}], "usage": {"input": 100, "output": 20}}


def test_claude_code_names_select_reins_tools_and_see_claude_code_inputs(
        tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    (tmp_path / "NOTE.md").write_text("a draft\n")
    provider = ScriptedProvider([write_call(), edit_call(), submit(summary="done")])
    hooks = (logger(log, events=("PreToolUse",), matcher="Write|Edit"),)
    request = attempt(tmp_path, tools=("file_read", "file_write", "edit"))
    _, result = drive(worker(provider, *hooks), request)
    assert result.failure is None
    seen = [(i["tool_name"], i["tool_input"]) for i in inputs(log)]
    assert seen == [
        ("Write", {"file_path": str(tmp_path / "NOTE.md"), "content": "# Note\n"}),
        ("Edit", {"file_path": str(tmp_path / "NOTE.md"), "old_string": "draft",
                  "new_string": "final"}),
    ]


def test_a_bash_guard_reads_command_and_its_block_reaches_the_model(tmp_path: Path) -> None:
    # The guard as written for Claude Code: it reads .tool_input.command and exits 2.
    guard = ("python3 -c 'import json,sys; d=json.load(sys.stdin); "
             "c=d[\"tool_input\"][\"command\"]; "
             "sys.exit(2 if d[\"tool_name\"]==\"Bash\" and \"rm -rf\" in c else 0)' "
             "|| { echo 'no rm -rf' >&2; exit 2; }")
    provider = ScriptedProvider([shell_call("rm -rf build"), submit(summary="refused")])
    hooks = (Hook(name="guard", command=guard, events=("PreToolUse",), matcher="Bash"),)
    request = attempt(tmp_path, tools=("file_read", "shell"), permissions=("fs:read:**",))
    _, result = drive(worker(provider, *hooks), request)
    assert provider.requests[1].messages[-1].content == "blocked by hook guard: no rm -rf"
    assert [r["status"] for r in result.extra["x-rein-hooks"]] == ["blocked"]


def test_a_rewrite_in_claude_code_shape_is_read_back_as_reins_arguments(
        tmp_path: Path) -> None:
    rewrite = answer({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {
        "file_path": str(tmp_path / "NOTE.md"), "content": "Rewritten.",
        "description": "dropped: rein has no such argument"}}})
    provider = ScriptedProvider([write_call(), submit(summary="done")])
    hooks = (Hook(name="wrap", command=rewrite, events=("PreToolUse",), matcher="Write"),)
    items, result = drive(worker(provider, *hooks), attempt(tmp_path))
    assert result.failure is None
    assert (tmp_path / "NOTE.md").read_text() == "Rewritten."
    notice = next(i.data for i in items if "rewrote" in str(i.data.get("text", "")))
    assert notice["arguments"] == {"path": "NOTE.md", "content": "Rewritten."}


def test_a_rewrite_outside_the_workspace_is_refused_by_the_permission_check(
        tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    rewrite = answer({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {
        "file_path": str(outside), "content": "x"}}})
    provider = ScriptedProvider([write_call(), submit(summary="refused")])
    hooks = (Hook(name="wrap", command=rewrite, events=("PreToolUse",), matcher="Write"),)
    drive(worker(provider, *hooks), attempt(tmp_path))
    assert not outside.exists()
    assert provider.requests[1].messages[-1].is_error


def test_reins_names_and_format_rein_keep_reins_shape(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    provider = ScriptedProvider([write_call(), submit(summary="done")])
    hooks = (logger(log, events=("PreToolUse",), matcher="file_write"),
             logger(log, events=("PreToolUse",), matcher="Write", format="rein"))
    drive(worker(provider, *hooks), attempt(tmp_path))
    assert [(i["tool_name"], i["tool_input"]) for i in inputs(log)] == [
        ("file_write", {"path": "NOTE.md", "content": "# Note\n"})] * 2


def test_format_claude_shows_every_tool_in_claude_code_shape(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    provider = ScriptedProvider([write_call(), submit(summary="done")])
    hooks = (logger(log, events=("PreToolUse", "PostToolUse"), format="claude"),)
    drive(worker(provider, *hooks), attempt(tmp_path))
    pre, post = inputs(log)
    assert pre["tool_name"] == post["tool_name"] == "Write"
    assert pre["tool_input"] == post["tool_input"] == {
        "file_path": str(tmp_path / "NOTE.md"), "content": "# Note\n"}


def test_glob_has_no_rein_equivalent_and_selects_nothing(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    provider = ScriptedProvider([write_call(), submit(summary="done")])
    hooks = (logger(log, events=("PreToolUse",), matcher="Glob|Grep"),)
    drive(worker(provider, *hooks), attempt(tmp_path))
    assert not log.exists()


def test_every_input_names_a_readable_transcript_of_the_session(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    provider = ScriptedProvider([write_call(), submit(summary="done")])
    hooks = (logger(log, events=("SessionStart", "PostToolUse", "SessionEnd"),
                    matcher="Write"),)
    drive(worker(provider, *hooks), attempt(tmp_path))
    start, post, end = inputs(log)
    assert start["transcript_path"] == post["transcript_path"] == end["transcript_path"]
    path = Path(end["transcript_path"])
    assert path.is_relative_to(tmp_path / ".rein" / "transcripts")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    # As the last hook read it: the brief, the model's call, the call's result, and the
    # call that handed in the outputs.
    assert [r["type"] for r in records] == ["user", "assistant", "user", "assistant"]
    assert records[0]["message"]["content"].startswith("# Write the note")
    [call] = records[1]["message"]["content"]
    assert call["type"] == "tool_use" and call["input"] == {"path": "NOTE.md",
                                                            "content": "# Note\n"}
    [result] = records[2]["message"]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == call["id"]
    assert records[1]["parentUuid"] == records[0]["uuid"]
    assert {r["sessionId"] for r in records} == {start["session_id"]}


def test_the_legacy_approve_is_refused_with_a_code_and_grants_nothing(tmp_path: Path) -> None:
    provider = ScriptedProvider([write_call(path="OTHER.md"), submit(summary="refused")])
    approve = Hook(name="approve", command=answer({"decision": "approve", "reason": "ok"}),
                   events=("PreToolUse",), matcher="file_write")
    _, result = drive(worker(provider, approve), attempt(tmp_path))
    assert not (tmp_path / "OTHER.md").exists()
    assert provider.requests[1].messages[-1].is_error  # the permission check refused it
    [run] = result.extra["x-rein-hooks"]
    assert run["status"] == "failed" and run["code"] == "HOOK001"
    assert run["message"].startswith('HOOK001: the legacy decision "approve" is refused')


def test_a_fail_closed_hook_that_answers_approve_blocks(tmp_path: Path) -> None:
    provider = ScriptedProvider([write_call(), submit(summary="blocked")])
    approve = Hook(name="approve", command=answer({"decision": "approve"}),
                   events=("PreToolUse",), matcher="file_write", fail_closed=True)
    _, result = drive(worker(provider, approve), attempt(tmp_path))
    assert not (tmp_path / "NOTE.md").exists()
    [run] = result.extra["x-rein-hooks"]
    assert run["status"] == "blocked" and run["code"] == "HOOK001"


def test_defer_sends_the_call_to_a_person(tmp_path: Path) -> None:
    asked: list[Any] = []

    async def approver(ask: Any) -> str:
        asked.append(ask)
        return "decline"

    provider = ScriptedProvider([write_call(), submit(summary="declined")])
    defer = Hook(name="defer", command=answer({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "defer"}}),
        events=("PreToolUse",), matcher="file_write")
    items, result = drive(worker(provider, defer, approver=approver), attempt(tmp_path))
    assert [a.tool for a in asked] == ["file_write"]
    assert not (tmp_path / "NOTE.md").exists()
    assert [r["outcome"] for r in result.extra["x-rein-hooks"]] == ["deferred"]
    assert any(i.kind is ItemKind.TOOL_RESULT for i in items)


def test_rein_toml_format_reaches_the_hook_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"  # a user file's hooks need no trust
    env = {"REIN_USER_CONFIG": str(user), "REIN_MANAGED_CONFIG": str(tmp_path / "none.toml")}
    user.write_text('[hooks.log]\ncommand = "cat"\nevents = ["PreToolUse"]\nformat = "claude"\n')
    config = load_config(tmp_path, env=env)
    assert from_spec(config.hooks["log"]).format == "claude"
    assert from_spec(HookSpec(name="x", command=("cat",))).format is None
    user.write_text('[hooks.log]\ncommand = "cat"\nevents = ["PreToolUse"]\nformat = "codex"\n')
    with pytest.raises(ConfigError) as bad:
        load_config(tmp_path, env=env)
    assert bad.value.code == "CFG004" and "format" in bad.value.message


def test_an_mcp_tool_keeps_its_name_and_arguments_in_either_format(tmp_path: Path) -> None:
    import asyncio

    from rein.tools.hooks import HookRunner

    log = tmp_path / "log.jsonl"
    rewrite = answer({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "updatedInput": {"timezone": "UTC"}}})
    hooks = [logger(log, events=("PreToolUse",), matcher="mcp__time__.*", format="claude"),
             Hook(name="utc", command=rewrite, events=("PreToolUse",),
                  matcher="mcp__time__get_current_time")]
    runner = HookRunner(hooks, cwd=tmp_path, session_id="s")
    call = {"tool_name": "mcp__time__get_current_time",
            "tool_input": {"timezone": "Europe/Paris"}}
    chain = asyncio.run(runner.run("PreToolUse", call, tool="mcp__time__get_current_time"))
    [seen] = inputs(log)
    assert (seen["tool_name"], seen["tool_input"]) == (
        "mcp__time__get_current_time", {"timezone": "Europe/Paris"})
    assert chain.tool_input == {"timezone": "UTC"}
