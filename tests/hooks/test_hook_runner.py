"""The hook runner with real shell-script hooks: the wire format, the chain semantics, the
timeout that kills the process group, and redaction of what the sink records."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rein.tools.hook_wire import interpret, matches
from rein.tools.hooks import NOTHING, ChainOutcome, Hook, HookRunner
from rein.tools.process import GROUP_WATCH


def script(root: Path, name: str, body: str) -> str:
    path = root / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def runner(root: Path, *hooks: Hook, sink: list[tuple[str, Any]] | None = None,
           **kw: Any) -> HookRunner:
    events = sink if sink is not None else []
    return HookRunner(hooks, cwd=root, session_id="run-1/node#1",
                      sink=lambda kind, data: events.append((kind, dict(data))), **kw)


def pre(r: HookRunner, tool: str, args: Mapping[str, Any]) -> ChainOutcome:
    return asyncio.run(r.run("PreToolUse", {"tool_name": tool, "tool_input": dict(args),
                                            "tool_use_id": "c1"}, tool=tool))


def hook(name: str, command: str, *events: str, **kw: Any) -> Hook:
    return Hook(name=name, command=command, events=events or ("PreToolUse",), **kw)


def test_the_hook_reads_the_claude_code_input_on_stdin(tmp_path: Path) -> None:
    log = script(tmp_path, "log.sh", f'cat >> "{tmp_path}/log.jsonl"; echo >> '
                                     f'"{tmp_path}/log.jsonl"\n')
    out = pre(runner(tmp_path, hook("log", log)), "shell", {"command": "ls"})
    assert out.blocked is None and out.runs[0].status == "completed"
    seen = json.loads((tmp_path / "log.jsonl").read_text())
    assert seen["hook_event_name"] == "PreToolUse" and seen["tool_name"] == "shell"
    assert seen["tool_input"] == {"command": "ls"} and seen["tool_use_id"] == "c1"
    assert seen["session_id"] == "run-1/node#1" and seen["cwd"] == str(tmp_path)


def test_exit_2_blocks_with_stderr_as_the_reason(tmp_path: Path) -> None:
    block = script(tmp_path, "b.sh", 'echo "no writes to .env" >&2; exit 2\n')
    out = pre(runner(tmp_path, hook("guard", block)), "file_write", {"path": ".env"})
    assert out.blocked == "no writes to .env" and out.blocked_by == "guard"
    assert out.runs[0].status == "blocked"


def test_exit_2_without_a_reason_fails_and_does_not_block(tmp_path: Path) -> None:
    out = pre(runner(tmp_path, hook("mute", "exit 2")), "shell", {})
    assert out.blocked is None and out.runs[0].status == "failed"


def test_another_exit_code_fails_open(tmp_path: Path) -> None:
    out = pre(runner(tmp_path, hook("crash", "echo boom >&2; exit 7")), "shell", {})
    assert out.blocked is None
    assert (out.runs[0].status, out.runs[0].message) == ("failed", "exited 7: boom")


def test_a_fail_closed_hook_that_crashes_or_times_out_blocks(tmp_path: Path) -> None:
    crash = hook("guard", "exit 7", fail_closed=True)
    out = pre(runner(tmp_path, crash), "shell", {})
    assert out.blocked == "hook guard failed (exited 7) and is fail_closed"
    assert out.runs[0].status == "blocked"
    slow = hook("slow", "sleep 30", fail_closed=True, timeout_seconds=0.3)
    assert "timed out" in str(pre(runner(tmp_path, slow), "shell", {}).blocked)
    gone = Hook(name="gone", command=("/nonexistent/hook",), events=("PreToolUse",),
                fail_closed=True)
    assert "cannot start" in str(pre(runner(tmp_path, gone), "shell", {}).blocked)


def test_a_program_that_cannot_start_fails_open(tmp_path: Path) -> None:
    gone = Hook(name="gone", command=("/nonexistent/hook",), events=("PreToolUse",))
    out = pre(runner(tmp_path, gone), "shell", {})
    assert out.blocked is None and out.runs[0].status == "failed"
    assert out.runs[0].message.startswith("cannot start")


def test_a_block_wins_and_discards_rewrites_but_later_hooks_still_run(tmp_path: Path) -> None:
    rewrite = ('echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
               '"updatedInput": {"command": "echo safe"}}}\'')
    after = script(tmp_path, "after.sh", f'cat > "{tmp_path}/after.json"\n')
    out = pre(runner(tmp_path, hook("rw", rewrite), hook("no", "echo nope >&2; exit 2"),
                     hook("after", after)), "shell", {"command": "rm -rf /"})
    assert out.blocked == "nope" and out.tool_input is None and out.skip is None
    assert [r.status for r in out.runs] == ["completed", "blocked", "completed"]
    # the hook after the block still ran, and read the input as rewritten so far
    assert json.loads((tmp_path / "after.json").read_text())["tool_input"] == {
        "command": "echo safe"}


def test_rewrites_apply_in_order_each_hook_reading_the_last(tmp_path: Path) -> None:
    wrap = script(tmp_path, "wrap.sh", """python3 -c '
import json, sys
d = json.load(sys.stdin)
cmd = d["tool_input"]["command"]
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
      "updatedInput": {"command": "(" + cmd + ")"}}}))'
""")
    out = pre(runner(tmp_path, hook("a", wrap), hook("b", wrap)), "shell", {"command": "ls"})
    assert out.tool_input == {"command": "((ls))"}
    assert [r.outcome for r in out.runs] == ["rewrote", "rewrote"]


def test_additional_context_accumulates_and_ask_is_passed_on(tmp_path: Path) -> None:
    ctx = ('echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
           '"additionalContext": "%s", "permissionDecision": "%s"}}\'')
    out = pre(runner(tmp_path, hook("one", ctx % ("first", "allow")),
                     hook("two", ctx % ("second", "ask"))), "shell", {})
    assert out.context == ("first", "second") and out.ask
    assert out.context_text == "first\nsecond"


def test_skip_is_explicit_and_recorded(tmp_path: Path) -> None:
    skip = ('echo \'{"hookSpecificOutput": {"hookEventName": "PreToolUse", '
            '"skipResult": "cached: 3 files"}}\'')
    out = pre(runner(tmp_path, hook("cache", skip)), "shell", {"command": "ls"})
    assert (out.skip, out.skipped_by) == ("cached: 3 files", "cache")
    assert out.runs[0].outcome == "skipped"


def test_continue_false_stops_the_session(tmp_path: Path) -> None:
    stop = 'echo \'{"continue": false, "stopReason": "quota reached"}\''
    out = pre(runner(tmp_path, hook("quota", stop)), "shell", {})
    assert out.stop == "quota reached" and out.blocked == "quota reached"


def test_matchers_select_tools_as_claude_code_does() -> None:
    assert matches(None, "shell") and matches("*", "shell") and matches("", "x")
    assert matches("file_write|edit", "edit")
    assert not matches("file_write", "file_write_all")  # exact, not a prefix
    assert matches("mcp__time__.*", "mcp__time__get_current_time")
    assert not matches("mcp__time__.*", "mcp__other__x")
    assert matches("file_write", None)  # events without a tool always match


def test_a_built_in_tool_is_matched_by_each_of_its_spellings(tmp_path: Path) -> None:
    guard = hook("guard", "echo no >&2; exit 2", matcher="file_write")
    assert pre(runner(tmp_path, guard), "write", {"path": ".env"}).blocked == "no"
    assert pre(runner(tmp_path, guard), "file_read", {"path": ".env"}) is NOTHING
    by_kind = hook("guard", "echo no >&2; exit 2", matcher="write")
    assert pre(runner(tmp_path, by_kind), "file_write", {"path": ".env"}).blocked == "no"


def test_only_selected_hooks_run_and_none_means_nothing_spawned(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    h = hook("w", f'touch "{marker}"', matcher="file_write")
    assert pre(runner(tmp_path, h), "shell", {}) is NOTHING
    assert not marker.exists()
    assert pre(runner(tmp_path), "file_write", {}) is NOTHING
    pre(runner(tmp_path, h), "file_write", {})
    assert marker.exists()


def test_a_hook_past_its_timeout_is_killed_with_its_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    slow = hook("slow", f'sleep 60 & echo $! > "{pidfile}"; wait', timeout_seconds=0.5)
    out = pre(runner(tmp_path, slow), "shell", {})
    assert out.blocked is None and out.runs[0].status == "failed"
    assert "timed out" in out.runs[0].message
    assert not alive(int(pidfile.read_text()))


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for a reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def test_the_sink_hears_each_run_live_and_secrets_are_redacted(tmp_path: Path) -> None:
    events: list[tuple[str, Any]] = []
    echo = hook("echo", 'cat; echo "sk-live-123456" >&2; exit 2')
    r = runner(tmp_path, echo, sink=events,
               redact=lambda v: json.loads(json.dumps(v).replace("sk-live-123456", "[secret]")))
    out = pre(r, "shell", {"command": "curl -H 'key: sk-live-123456'"})
    assert out.blocked == "sk-live-123456"  # the model's view is the caller's to redact
    assert [k for k, _ in events] == ["started", "completed"]
    assert "sk-live-123456" not in json.dumps(events)
    started, completed = events[0][1], events[1][1]
    assert started["status"] == "running" and started["input"]["tool_name"] == "shell"
    assert completed["status"] == "blocked" and completed["durationMs"] >= 0
    assert completed["id"] == started["id"] == "run-1/node#1/hook-1"


def test_secrets_are_not_in_the_hooks_environment(tmp_path: Path) -> None:
    dump = hook("env", f'env > "{tmp_path}/env.txt"')
    r = runner(tmp_path, dump, env={"PATH": os.environ["PATH"], "REIN_SECRET_TOKEN": "t0ps3cret",
                                    "OPENAI_API_KEY": "sk-k3y", "LANG": "C.UTF-8"})
    pre(r, "shell", {})
    env = (tmp_path / "env.txt").read_text()
    assert "t0ps3cret" not in env and "sk-k3y" not in env
    assert f"REIN_PROJECT_DIR={tmp_path}" in env and "LANG=C.UTF-8" in env


def test_stdin_reaches_a_watched_hook_through_the_gate(tmp_path: Path) -> None:
    """Inside a run the engine watches process groups: the input follows the gate's line."""

    class Watch:
        def started(self, pgid: int) -> None: ...

        def ended(self, pgid: int) -> None: ...

    big = {"content": "x" * 200_000}  # more than a pipe's buffer
    count = hook("count", f'wc -c > "{tmp_path}/n"')

    async def go() -> ChainOutcome:
        token = GROUP_WATCH.set(Watch())
        try:
            return await runner(tmp_path, count).run(
                "PreToolUse", {"tool_name": "t", "tool_input": big}, tool="t")
        finally:
            GROUP_WATCH.reset(token)

    assert asyncio.run(go()).runs[0].status == "completed"
    assert int((tmp_path / "n").read_text()) > 200_000


def test_session_start_plain_stdout_is_context() -> None:
    assert interpret("SessionStart", 0, "use pnpm, not npm\n", "").context == "use pnpm, not npm"
    assert interpret("PreToolUse", 0, "just chatter", "").context == ""


def test_an_unknown_event_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown hook event"):
        asyncio.run(runner(tmp_path).run("Stop"))
