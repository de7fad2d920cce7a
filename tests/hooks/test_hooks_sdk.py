"""Hooks through the SDK: ``rein.Harness`` starts a graph run whose hook asks for a person,
the run waits, and a second Harness (another process, as far as the run knows) resumes it.
The hooks come from the user's rein.toml, so they need no trust."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein import Harness
from rein.core.states import ApprovalStatus, RunStatus
from rein.protocol.feed import Feed
from tests.scenarios.model_env import call, graph, isolate, task

LOGGER = '{ cat; echo; } >> "$REIN_PROJECT_DIR/hook-log.jsonl"\n'
ASK = ("echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", "
       "\"permissionDecision\": \"ask\", \"permissionDecisionReason\": \"a person checks "
       "every write\"}}'\n")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    (root / "hooks").mkdir(parents=True)
    isolate(root, monkeypatch)
    (root / "hooks" / "log.sh").write_text(LOGGER)
    (root / "hooks" / "ask.sh").write_text(ASK)
    user = tmp_path / "user.toml"
    user.write_text(
        f'[hooks.log]\ncommand = "sh {root}/hooks/log.sh"\n'
        'events = ["SessionStart", "PreToolUse", "PostToolUse", "SessionEnd"]\n'
        'matcher = "file_write"\n\n'
        f'[hooks.ask]\ncommand = ["sh", "{root}/hooks/ask.sh"]\nevents = ["PreToolUse"]\n'
        'matcher = "file_write"\n')
    monkeypatch.setenv("REIN_USER_CONFIG", str(user))
    (root / "turns.json").write_text(json.dumps([
        call("file_write", path="NOTE.md", content="# Note\n"),
        call("submit_outputs", summary="wrote NOTE.md")]))
    (root / "rein.toml").write_text(
        '[providers.script]\nkind = "scripted"\n'
        'options = { script = "turns.json", position = "conversation" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "s"\n')
    node = task("Write the note", tools=["file_write"], permissions=["fs:write:NOTE.md"],
                outputs={"summary": "what"})
    (root / "g.agraph.yaml").write_text(yaml.safe_dump(graph("sdk", {"write": node}, "write")))
    return root


def test_a_hook_that_asks_pauses_the_run_and_a_resume_does_not_hook_the_call_twice(
        ws: Path) -> None:
    async def first() -> tuple[str, Any]:
        harness = Harness.open(ws)
        try:
            prepared = await harness.prepare(ws / "g.agraph.yaml", given={})
            started = await harness.start(prepared, approved=prepared.digest)
            assert started.status in (RunStatus.WAITING, RunStatus.AWAITING_HUMAN)
            [row] = harness.approvals()
            await harness.answer(row.approval_id, ApprovalStatus.ACCEPTED, go_on=False)
            return started.run_id, row
        finally:
            harness.close()

    run_id, row = asyncio.run(first())
    assert row.request["tool"] == "file_write"
    assert not (ws / "NOTE.md").exists()  # the write waited for the person

    async def second() -> tuple[Any, list[Any]]:
        harness = Harness.open(ws)
        try:
            outcome = await harness.resume(run_id)
            return outcome, [e async for e in harness.subscribe(run_id)]
        finally:
            harness.close()

    outcome, events = asyncio.run(second())
    assert outcome.status is RunStatus.SUCCEEDED
    assert (ws / "NOTE.md").read_text() == "# Note\n"

    log = [json.loads(line) for line in (ws / "hook-log.jsonl").read_text().splitlines()
           if line.strip()]
    assert [e["hook_event_name"] for e in log] == [
        "SessionStart", "PreToolUse", "PostToolUse", "SessionEnd"]

    completed = [e.payload["run"] for e in events if e.type == "hook/completed"]
    assert [(r["hook"], r["eventName"], r.get("outcome")) for r in completed] == [
        ("log", "SessionStart", None), ("log", "PreToolUse", None),
        ("ask", "PreToolUse", "asked"), ("log", "PostToolUse", None),
        ("log", "SessionEnd", None)]

    # protocol surfaces see the Codex hook-run summary (the third hook run: `ask`)
    fold = Feed(thread_id=run_id, turn_id="turn-1", cwd=str(ws), input=[])
    notes = [n for e in events for n in fold.apply(e) if n.method == "hook/completed"]
    note = notes[2]
    assert note.params["run"]["eventName"] == "preToolUse"
    assert note.params["run"]["handlerType"] == "command"
    assert note.params["run"]["status"] == "completed"
    assert note.params["turnId"] == "turn-1"


def test_a_hook_block_through_the_sdk_reaches_the_model_and_the_record(ws: Path) -> None:
    (ws / "hooks" / "ask.sh").write_text("echo 'NOTE.md is frozen' >&2; exit 2\n")
    (ws / "turns.json").write_text(json.dumps([
        call("file_write", path="NOTE.md", content="# Note\n"),
        call("submit_outputs", summary="left NOTE.md alone")]))

    async def go() -> tuple[Any, dict[str, Any], list[Any]]:
        harness = Harness.open(ws)
        try:
            prepared = await harness.prepare(ws / "g.agraph.yaml", given={})
            outcome = await harness.start(prepared, approved=prepared.digest)
            events = [e async for e in harness.subscribe(outcome.run_id)]
            return outcome, harness.record(outcome.run_id), events
        finally:
            harness.close()

    outcome, record, events = asyncio.run(go())
    assert outcome.status is RunStatus.SUCCEEDED
    assert not (ws / "NOTE.md").exists()
    result = next(e.payload["data"] for e in events
                  if e.type == "item" and e.payload["kind"] == "tool_result")
    assert result["content"] == "blocked by hook ask: NOTE.md is frozen"
    hooks = record["nodes"][0]["attempts"][0]["x-rein-hooks"]
    assert [(h["hook"], h["status"]) for h in hooks] == [
        ("log", "completed"), ("log", "completed"), ("ask", "blocked"), ("log", "completed")]
