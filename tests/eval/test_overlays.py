"""A configuration's system-prompt text and tool descriptions reach every model call of its
trials, and nothing else of the request changes; a described tool no call offered is said."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_eval

from rein.eval.configs import area, diff, load_configurations
from rein.eval.overlays import Applied, OverlaidProvider, PromptOverlay
from rein.providers.scripted import ScriptedProvider
from rein.providers.types import Message, ModelRequest, ToolSpec

WORDS = """
[configurations.plain]
[configurations.plain.rein.providers.script]
kind = "scripted"
options = { script = "{scenario}/model.json", position = "conversation" }
[configurations.plain.rein.tiers.standard]
provider = "script"
model = "scripted"

[configurations.worded]
extends = "plain"
system = "Prefer the smallest change."
[configurations.worded.tools.file_write]
description = "Write a whole file."
[configurations.worded.tools.shel]
description = "A misspelled tool: offered by no call."
"""


def _request() -> ModelRequest:
    return ModelRequest(model="m", system="rein's own prompt",
                        messages=(Message(role="user", content="do it"),),
                        tools=(ToolSpec(name="file_write", description="rein's words",
                                        parameters={"type": "object"}),
                               ToolSpec(name="file_read", description="read",
                                        parameters={"type": "object"})))


def test_the_overlay_changes_the_system_prompt_and_the_described_tools_only() -> None:
    inner = ScriptedProvider([{"text": "ok"}])
    overlay = PromptOverlay(system="Prefer the smallest change.",
                            tools={"file_write": "Write a whole file.", "shel": "typo"})
    applied = Applied(overlay)
    provider = OverlaidProvider(inner, overlay, applied)
    asyncio.run(provider.complete(_request()))
    [seen] = inner.requests
    assert seen.system == "rein's own prompt\n\nPrefer the smallest change."
    assert [(t.name, t.description) for t in seen.tools] == [
        ("file_write", "Write a whole file."), ("file_read", "read")]
    assert seen.tools[0].parameters == {"type": "object"}
    assert seen.messages == _request().messages and provider.name == inner.name
    assert applied.to_json() == {"calls": 1, "system": 1,
                                 "tools": {"file_write": 1, "shel": 0},
                                 "never_offered": ["shel"]}


def test_words_are_part_of_the_digest_and_the_diff(tmp_path: Path) -> None:
    path = tmp_path / "eval.toml"
    path.write_text(WORDS)
    declared = load_configurations(path)
    plain, worded = declared["plain"], declared["worded"]
    assert "system" not in plain.definition and "tools" not in plain.definition
    changed = {d["key"]: d["to"] for d in diff(plain, worded)}
    assert changed == {"system": "Prefer the smallest change.",
                       "tools.file_write.description": "Write a whole file.",
                       "tools.shel.description": "A misspelled tool: offered by no call."}
    assert {area(k) for k in changed} == {"prompt", "tools"}
    path.write_text(WORDS.replace("Write a whole file.", "Write the file."))
    assert load_configurations(path)["worded"].digest != worded.digest


@pytest.mark.parametrize("bad", ['system = 3', 'tools = { shell = "x" }',
                                 'tools.shell = { description = "" }',
                                 'tools.shell = { description = "x", name = "y" }'])
def test_malformed_words_are_refused(tmp_path: Path, bad: str) -> None:
    from rein.errors import ConfigError

    path = tmp_path / "eval.toml"
    path.write_text(f"[configurations.a]\n{bad}\n")
    with pytest.raises(ConfigError) as refused:
        load_configurations(path)
    assert refused.value.code == "EVAL005"


def test_every_model_call_of_a_trial_carries_the_words(ws: Path, tmp_path: Path,
                                                        capsys: Any) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITE / "fix-greeting", suite / "fix-greeting")
    (suite / "eval.toml").write_text(WORDS)
    code, result = run_eval(capsys, str(suite), "--config", "plain", "--config", "worded")
    assert code == 0
    configs = {c["name"]: c for c in result["configurations"]}
    assert configs["plain"]["overlays"] is None
    # fix-greeting's script makes two model calls, each offered file_write.
    assert configs["worded"]["overlays"] == {"calls": 2, "system": 2,
                                             "tools": {"file_write": 2, "shel": 0},
                                             "never_offered": ["shel"]}
    assert configs["worded"]["solved"] == 1
    from rein.cli import main

    main(["eval", str(suite), "--config", "worded", "-q"])
    assert "tool description(s) never shown: shel" in capsys.readouterr().out


def test_a_command_worker_configuration_cannot_carry_words(ws: Path, tmp_path: Path,
                                                           capsys: Any) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(SUITE / "fix-greeting", suite / "fix-greeting")
    (suite / "eval.toml").write_text("""
[configurations.cli]
system = "Be brief."
[configurations.cli.rein.workers.command.agent]
argv = ["true"]
[configurations.cli.rein.tiers.standard]
provider = "agent"
model = "agent"
""")
    code, out = run_eval(capsys, str(suite), "--config", "cli")
    assert (code, out["error"]["code"]) == (64, "EVAL005")
    assert "never reads" in out["error"]["message"]
