"""Hooks an OAP profile binds by name (``lifecycle.on_start``/``on_end``), through ``rein
run``: they fire at the session's boundaries with the reference's ``with`` as ``params``,
and a hook without ``events`` fires nowhere else. Secrets stay out of every recorded input
and output; a compaction is recorded with the conversation it replaced."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.scenarios.harness import summary
from tests.scenarios.model_env import ModelScenario, call, graph, ms_fixture, task

__all__ = ["ms_fixture"]

PROFILE = Path(__file__).parents[1] / "scenarios" / "data" / "note-writer.agent.yaml"
SCRIPT = ('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
          '[tiers.standard]\nprovider = "script"\nmodel = "s"\n')


def user_hooks(ms: ModelScenario, toml: str) -> None:
    """Hooks in the user's own rein.toml: they need no trust."""
    ms.monkeypatch.setenv("REIN_USER_CONFIG", str(ms.file(".user/rein.toml", toml)))


def test_profile_lifecycle_hooks_fire_at_session_start_and_end(ms: ModelScenario) -> None:
    profile = yaml.safe_load(PROFILE.read_text())
    profile["spec"]["lifecycle"]["on_start"] = [{"hook": "audit", "with": {"level": "strict"}}]
    profile["spec"]["lifecycle"]["on_end"] = [{"hook": "audit"}]
    ms.file("profiles/note-writer.agent.yaml", yaml.safe_dump(profile))
    ms.file("audit.sh", '{ cat; echo; } >> "$REIN_PROJECT_DIR/audit.jsonl"\n')
    user_hooks(ms, f'[hooks.audit]\ncommand = "sh {ms.root}/audit.sh"\n')
    ms.turns("turns.json", [call("file_write", path="docs/note.md", content="A note.\n"),
                            call("submit_outputs", summary="wrote docs/note.md")])
    ms.toml(SCRIPT)
    node = task("Write a note", tools=["file_write"], permissions=["fs:write:**"],
                outputs={"summary": "what"})
    node["x-rein-profile"] = "profiles/note-writer.agent.yaml"
    code, out = ms.run(ms.graph("g.agraph.yaml", graph("prof", {"note": node}, "note")))
    assert code == 0, out
    assert summary(out)["status"] == "succeeded"
    seen = [json.loads(line) for line in (ms.root / "audit.jsonl").read_text().splitlines()
            if line.strip()]
    assert [(e["hook_event_name"], e.get("params")) for e in seen] == [
        ("SessionStart", {"level": "strict"}), ("SessionEnd", None)]
    sources = {e.payload["run"]["source"] for e in ms.events() if e.type == "hook/completed"}
    assert sources == {"profile note-writer"}


SECRET = "tok-1234567890-abcdef"


def test_a_secret_in_a_call_never_reaches_a_recorded_hook_input_or_output(
        ms: ModelScenario) -> None:
    ms.monkeypatch.setenv("REIN_SECRET_TOKEN", SECRET)
    ms.file("echo.sh", "cat\n")  # prints its input: the recorded output holds it too
    user_hooks(ms, f'[hooks.echo]\ncommand = "sh {ms.root}/echo.sh"\n'
                   'events = ["PreToolUse", "PostToolUse"]\nmatcher = "file_write"\n')
    ms.turns("turns.json", [call("file_write", path="NOTE.md", content=f"key={SECRET}\n"),
                            call("submit_outputs", summary="done")])
    ms.toml(SCRIPT)
    node = task("Write", tools=["file_write"], permissions=["fs:write:**"],
                outputs={"summary": "what"})
    node["requirements"]["secrets"] = ["token"]
    code, out = ms.run(ms.graph("g.agraph.yaml", graph("sec", {"w": node}, "w")))
    assert code == 0, out
    runs = [e.payload["run"] for e in ms.events() if e.type.startswith("hook/")]
    assert len(runs) == 4
    assert all(SECRET not in json.dumps(r) for r in runs)
    started = [r for r in runs if r["status"] == "running"]
    assert started[0]["input"]["tool_input"]["content"] == "key=[secret:token]\n"
    assert "[secret:token]" in runs[1]["output"]


def test_compaction_in_a_graph_run_keeps_the_replaced_conversation(ms: ModelScenario) -> None:
    ms.file("pre.sh", 'cat > "$REIN_PROJECT_DIR/pre-compact.json"\n')
    user_hooks(ms, f'[hooks.pre]\ncommand = "sh {ms.root}/pre.sh"\nevents = ["PreCompact"]\n')
    big = call("file_write", path="NOTE.md", content="# Note\n")
    big["usage"] = {"input": 900, "output": 10}
    ms.turns("turns.json", [big, {"text": "Wrote NOTE.md; submit next."},
                            call("submit_outputs", summary="done")])
    ms.toml(SCRIPT + "context_tokens = 1000\n")
    node = task("Write", tools=["file_write"], permissions=["fs:write:**"],
                outputs={"summary": "what"})
    code, out = ms.run(ms.graph("g.agraph.yaml", graph("cmp", {"w": node}, "w")))
    assert code == 0, out
    assert json.loads((ms.root / "pre-compact.json").read_text())["trigger"] == "auto"
    [compaction] = ms.items("context_compaction")
    assert compaction["summary"] == "Wrote NOTE.md; submit next."
    assert compaction["context_tokens"] == 1000 and compaction["input_tokens"] == 900
    assert [m["role"] for m in compaction["replaced"]] == ["user", "assistant", "tool"]
