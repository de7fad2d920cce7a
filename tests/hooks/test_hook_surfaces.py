"""What people and protocol clients see of hook runs: `rein run`'s progress lines, and the
protocol's feed of hook events."""

from __future__ import annotations

import json
from typing import Any

from rein.cli import main
from rein.protocol.feed import Feed
from rein.store.base import Event
from tests.scenarios.model_env import ModelScenario, call, graph, ms_fixture, task

__all__ = ["ms_fixture"]


def test_rein_run_tells_the_person_about_a_block_and_a_system_message(
        ms: ModelScenario, capsys: Any) -> None:
    ms.turns("turns.json", [call("file_write", path=".env", content="x"),
                            call("submit_outputs", summary="gave up")])
    answer = {"decision": "block", "reason": "no secrets in files",
              "systemMessage": "guard-env refused a write to .env"}
    ms.file("hooks/guard.sh", f"echo '{json.dumps(answer)}'\n")
    # The user's own rein.toml: hooks from it need no trust.
    user = ms.file("user.toml", '[hooks.guard]\ncommand = "sh hooks/guard.sh"\n'
                                'events = ["PreToolUse"]\nmatcher = "file_write"\n')
    ms.monkeypatch.setenv("REIN_USER_CONFIG", str(user))
    ms.toml('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
            '[tiers.standard]\nprovider = "script"\nmodel = "s"\n')
    node = task("Write", tools=["file_write"], permissions=["fs:write:**"],
                outputs={"summary": "what"})
    path = ms.graph("g.agraph.yaml", graph("g", {"w": node}, "w"))
    code, digest = ms.rein("graph", "digest", path)
    assert code == 0, digest
    capsys.readouterr()
    assert main(["run", path, "--approve", digest.strip()]) == 0
    err = capsys.readouterr().err
    assert "! hook guard (PreToolUse file_write) blocked: no secrets in files" in err
    assert "i hook guard (PreToolUse file_write): guard-env refused a write to .env" in err


def event(type_: str, payload: dict[str, Any]) -> Event:
    return Event(run_id="r1", seq=1, type=type_, at="2030-01-01T00:00:00+00:00",
                 payload=payload)


def feed() -> Feed:
    return Feed(thread_id="thr-1", turn_id="turn-1", cwd="/w", input=[])


def test_hook_runs_read_as_codex_hook_run_summaries() -> None:
    run = {"id": "r1/n#1/hook-1", "hook": "guard", "eventName": "PreToolUse",
           "status": "blocked", "message": "no", "durationMs": 3.5, "source": "rein.toml",
           "systemMessage": "told you"}
    [note] = feed().apply(event("hook/completed", {"node": "n", "attempt": 1, "run": run}))
    assert note.method == "hook/completed" and note.params["turnId"] == "turn-1"
    assert note.params["run"] == {
        "id": "r1/n#1/hook-1", "eventName": "preToolUse", "handlerType": "command",
        "executionMode": "sync", "scope": "turn", "source": "unknown",
        "sourcePath": "/w/rein.toml", "displayOrder": 1, "startedAt": 1893456000,
        "status": "blocked", "statusMessage": "no", "durationMs": 4,
        "completedAt": 1893456000,
        "entries": [{"kind": "stop", "text": "no"}, {"kind": "warning", "text": "told you"}]}


def test_session_start_context_is_a_hook_prompt_item() -> None:
    started, completed = feed().apply(event("item", {
        "node": "n", "attempt": 1, "kind": "hook_prompt", "data": {"text": "House rules"}}))
    assert (started.method, completed.method) == ("item/started", "item/completed")
    assert completed.params["item"] == {"type": "hookPrompt", "id": "turn-1:hook-prompt-1",
                                        "fragments": [{"hookRunId": "",
                                                       "text": "House rules"}]}
