"""Reasoning summaries stream as reasoning deltas, and hook runs reach the wire as
``hook/started`` / ``hook/completed``, each valid for the official SDK's own models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.appserver.codex_env import Recorded, client, off_schema, turn_notifications
from tests.appserver.serve import reply, workspace

THOUGHT = "The user wants a greeting; echo prints one."


def test_reasoning_deltas_and_hook_runs_on_the_wire(tmp_path: Path) -> None:
    think = {"reasoning": THOUGHT, "tool_calls": [
        {"name": "shell_exec", "arguments": {"command": "echo hi"}}]}
    root = workspace(tmp_path, [think, reply("said hi")])
    (root / "hooks").mkdir()
    (root / "hooks" / "note.sh").write_text(
        "echo '" + json.dumps({"systemMessage": "checked by note"}) + "'\n")
    user = root / ".home" / "user.toml"  # the user's own rein.toml: its hooks need no trust
    user.parent.mkdir(parents=True)
    user.write_text('[hooks.note]\ncommand = "sh hooks/note.sh"\n'
                    'events = ["PreToolUse"]\nmatcher = "shell_exec"\n\n'
                    '[hooks.rules]\ncommand = "echo House rules: be brief."\n'
                    'events = ["SessionStart"]\n')
    seen = Recorded()
    with client(root, lambda m, p: {"decision": "accept"}, seen,
                env={"REIN_USER_CONFIG": str(user)}) as c:
        c.initialize()
        thread = c.thread_start({}).thread.id
        turn = c.turn_start(thread, "greet me").turn.id
        notes = list(turn_notifications(c, turn))
    assert seen.unknown() == []  # every one passed the SDK's own model
    assert off_schema(seen) == []
    methods = [n.method for n in notes]
    at = methods.index("item/reasoning/summaryPartAdded")
    assert methods[at - 1] == "item/started"
    assert methods[at + 1:at + 3] == ["item/reasoning/summaryTextDelta", "item/completed"]
    assert notes[at + 1].payload.delta == THOUGHT
    thought = notes[at + 2].payload.item.root
    assert thought.type == "reasoning" and thought.summary == [THOUGHT]
    pre_tool = [i for i, n in enumerate(notes) if n.method == "hook/started"
                and n.payload.run.event_name.value == "preToolUse"]
    assert methods.index("item/completed", at) < pre_tool[0]  # the thought, then the call

    hooks = [n.payload for n in notes if n.method.startswith("hook/")]
    session_start = [h for h in hooks if h.run.event_name.value == "sessionStart"]
    assert [h.run.status.value for h in session_start] == ["running", "completed"]
    [prompt] = [n.payload.item.root for n in notes if n.method == "item/completed"
                and n.payload.item.root.type == "hookPrompt"]
    assert [(f.hook_run_id, f.text) for f in prompt.fragments] == [
        (session_start[0].run.id, "House rules: be brief.")]
    started, completed = [h for h in hooks if h.run.event_name.value == "preToolUse"]
    assert started.run.id == completed.run.id
    assert started.run.status.value == "running" and completed.run.status.value == "completed"
    assert completed.run.event_name.value == "preToolUse"
    assert str(completed.run.source_path.root) == str(user)  # where the hook is defined
    assert completed.run.display_order == started.run.display_order == 2
    assert [(e.kind.value, e.text) for e in completed.run.entries] == [
        ("warning", "checked by note")]
    items = [n.payload.item.root.type for n in notes if n.method == "item/completed"]
    assert items == ["userMessage", "hookPrompt", "reasoning", "commandExecution",
                     "agentMessage"]


def test_a_turn_without_reasoning_sends_no_reasoning_item(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("hello")])
    seen = Recorded()
    with client(root, lambda m, p: {}, seen) as c:
        c.initialize()
        thread = c.thread_start({}).thread.id
        notes: list[Any] = list(turn_notifications(c, c.turn_start(thread, "hi").turn.id))
    assert not [n for n in notes if n.method.startswith(("item/reasoning", "hook/"))]
