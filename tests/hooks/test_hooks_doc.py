"""docs/hooks.md's rein.toml and its four shell-script hooks (a logger, a blocker of writes
to .env, a rewriter that wraps commands, a context injector), run as written against the
model worker with the scripted provider, in a graph run through the command line and the
SDK."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from support import ROOT

from rein import Harness
from rein.core.states import RunStatus
from tests.scenarios.harness import summary
from tests.scenarios.model_env import ModelScenario, call, graph, ms_fixture, task

__all__ = ["ms_fixture"]

PAGE = ROOT / "docs" / "hooks.md"
PROVIDER = ('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
            '[tiers.standard]\nprovider = "script"\nmodel = "s"\n\n')


def doc_toml() -> str:
    return re.findall(r"```toml\n(.*?)```", PAGE.read_text(), re.DOTALL)[0]


def doc_scripts() -> dict[str, str]:
    blocks = re.findall(r"```sh\n# (hooks/[\w.-]+)\n(.*?)```", PAGE.read_text(), re.DOTALL)
    return {name: body for name, body in blocks}


def notes_graph(permissions: list[str]) -> dict[str, Any]:
    node = task("Write the notes", tools=["file_write", "file_read", "shell"],
                permissions=permissions, outputs={"summary": "what was done"})
    return graph("notes", {"write_notes": node}, "write_notes")


def workspace(ms: ModelScenario, turns: list[Any], extra_toml: str = "") -> None:
    for name, body in doc_scripts().items():
        ms.file(name, body)
    ms.turns("turns.json", turns)
    ms.toml(PROVIDER + doc_toml() + extra_toml)


def trust(ms: ModelScenario) -> None:
    code, out = ms.rein("config", "trust", "--json")
    assert code == 4, out
    shown = json.loads(out)
    assert {i["key"] for i in shown["sections"]} >= {"hooks.log", "hooks.guard-env", "hooks.wrap"}
    code, out = ms.rein("config", "trust", "--digest", shown["digest"])
    assert code == 0, out


TURNS = [
    call("file_write", path=".env", content="TOKEN=abc\n"),
    call("shell", command="echo hi > out.txt"),
    call("file_write", path="NOTE.md", content="# Notes\n"),
    call("submit_outputs", summary="wrote NOTE.md"),
]


def test_the_documented_hooks_log_block_rewrite_and_add_context_in_a_graph_run(
        ms: ModelScenario) -> None:
    assert set(doc_scripts()) == {"hooks/log.sh", "hooks/guard-env.sh", "hooks/wrap.sh",
                                  "hooks/context.sh"}
    workspace(ms, TURNS)
    trust(ms)
    code, out = ms.run(ms.graph("notes.agraph.yaml", notes_graph(
        ["fs:write:**", "fs:read:**", "shell:exec"])))
    assert code == 0, out
    assert summary(out)["status"] == "succeeded"

    # the blocker: .env never written, and the model read the reason as the tool's result
    assert not (ms.root / ".env").exists()
    results = ms.items("tool_result")
    assert results[0]["ok"] is False and results[0]["refused"] is True
    assert results[0]["hook"] == "guard-env"
    assert results[0]["content"].startswith("blocked by hook guard-env: .env holds secrets")

    # the rewriter: the command ran wrapped, and the rewrite is in the trace
    assert (ms.root / "out.txt").read_text() == "hi\n"
    rewrites = [i for i in ms.items("notice") if "rewrote" in str(i.get("text"))]
    assert rewrites[0]["arguments"]["command"] == "nice -n 10 sh -c 'echo hi > out.txt'"

    # the context injector: the house rules joined the brief (a hookPrompt in the trace),
    # and after the write the model read the reminder
    assert ms.items("hook_prompt") == [{"text": "House rules: notes are Markdown with one "
                                                "heading."}]
    assert results[2]["content"].endswith(
        "[context from hooks]\nReminder: run the linter before you submit.")

    # the logger saw the session in order (the blocked call has no PostToolUse)
    log = [json.loads(line) for line in (ms.root / "hook-log.jsonl").read_text().splitlines()
           if line.strip()]
    assert [(e["hook_event_name"], e.get("tool_name")) for e in log] == [
        ("SessionStart", None), ("PreToolUse", "file_write"), ("PreToolUse", "shell"),
        ("PostToolUse", "shell"), ("PreToolUse", "file_write"), ("PostToolUse", "file_write"),
        ("SessionEnd", None)]
    run_id = summary(out)["run_id"]
    assert {e["session_id"] for e in log} == {f"{run_id}/write_notes#1"}
    assert log[-1]["reason"] == "completed"
    # the logger reads the call as the hooks before it rewrote it (wrap is defined later)
    assert log[2]["tool_input"] == {"command": "echo hi > out.txt"}

    # every run is a hook/started + hook/completed pair in the stream, and in the record
    events = ms.events()
    started = [e.payload["run"] for e in events if e.type == "hook/started"]
    completed = [e.payload["run"] for e in events if e.type == "hook/completed"]
    assert [r["id"] for r in started] == [r["id"] for r in completed]
    assert all(isinstance(r["durationMs"], float) for r in completed)
    blocked = [r for r in completed if r["status"] == "blocked"]
    assert [(r["hook"], r["eventName"], r["tool"]) for r in blocked] == [
        ("guard-env", "PreToolUse", "file_write")]
    assert {r["status"] for r in completed} == {"completed", "blocked"}
    attempt = ms.record()["nodes"][0]["attempts"][0]
    assert [r["id"] for r in attempt["x-rein-hooks"]] == [r["id"] for r in completed]


def test_a_rewrite_is_checked_against_the_permissions_after_it(ms: ModelScenario) -> None:
    """The node may run ``echo`` only: the wrapped command is refused, never run."""
    workspace(ms, [call("shell", command="echo hi > out.txt"),
                   call("submit_outputs", summary="could not")])
    trust(ms)
    code, out = ms.run(ms.graph("notes.agraph.yaml", notes_graph(
        ["fs:write:**", "fs:read:**", "shell:exec:echo*"])))
    assert code == 0, out
    result = ms.items("tool_result")[0]
    assert result["ok"] is False and result["refused"] is True
    assert "nice -n 10" in result["content"]
    assert not (ms.root / "out.txt").exists()


def test_an_untrusted_project_file_runs_no_hook(ms: ModelScenario) -> None:
    workspace(ms, TURNS)
    code, out = ms.run(ms.graph("notes.agraph.yaml", notes_graph(
        ["fs:write:**", "fs:read:**", "shell:exec"])))
    assert code == 0, out
    assert not (ms.root / "hook-log.jsonl").exists()
    assert (ms.root / ".env").exists()  # nothing guarded it: the hooks are withheld
    assert not [e for e in ms.events() if e.type.startswith("hook/")]


def test_config_show_warns_about_a_tool_hook_without_a_matcher(ms: ModelScenario) -> None:
    ms.toml('[hooks.every]\ncommand = "true"\nevents = ["PreToolUse"]\n\n'
            '[hooks.narrow]\ncommand = "true"\nevents = ["PreToolUse"]\nmatcher = "shell"\n')
    code, out = ms.rein("config", "show", "--json")
    assert code == 0, out
    warnings = json.loads(out)["warnings"]
    assert len(warnings) == 1 and warnings[0].startswith("hook 'every' has no matcher")
    code, out = ms.rein("config", "show")
    assert "# warning: hook 'every' has no matcher" in out


def test_the_documented_hooks_through_the_sdk(ms: ModelScenario) -> None:
    """The same four scripts under ``rein.Harness``: the session a library caller starts
    runs the same hooks, with the same results, as ``rein run``."""
    workspace(ms, TURNS)
    trust(ms)
    path = ms.root / ms.graph("notes.agraph.yaml", notes_graph(
        ["fs:write:**", "fs:read:**", "shell:exec"]))

    async def go() -> tuple[Any, list[Any]]:
        harness = Harness.open(ms.root)
        try:
            prepared = await harness.prepare(path, given={})
            outcome = await harness.start(prepared, approved=prepared.digest)
            return outcome, [e async for e in harness.subscribe(outcome.run_id)]
        finally:
            harness.close()

    outcome, events = asyncio.run(go())
    assert outcome.status is RunStatus.SUCCEEDED
    assert not (ms.root / ".env").exists() and (ms.root / "out.txt").read_text() == "hi\n"
    results = [e.payload["data"] for e in events
               if e.type == "item" and e.payload["kind"] == "tool_result"]
    assert results[0]["hook"] == "guard-env"
    assert results[2]["content"].endswith("Reminder: run the linter before you submit.")
    hooks = [(e.payload["run"]["hook"], e.payload["run"]["eventName"]) for e in events
             if e.type == "hook/completed"]
    assert hooks[:2] == [("log", "SessionStart"), ("context", "SessionStart")]
    assert hooks[-1] == ("log", "SessionEnd")


def test_a_malformed_hook_table_is_refused_with_its_line(ms: ModelScenario) -> None:
    ms.toml('[hooks.guard]\ncommand = "true"\nevents = ["preToolUse"]\n')
    code, out = ms.rein("config", "show", "--json")
    assert code == 64
    error = json.loads(out)["error"]
    assert error["code"] == "CFG004" and error["location"]["line"] == 3
    assert "must be a list of SessionStart, PreToolUse" in error["message"]
    ms.toml('[hooks.guard]\ncommand = "true"\nfail_closed = "yes"\n')
    assert ms.rein("config", "show")[0] == 64
