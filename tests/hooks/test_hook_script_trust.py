"""A hook's script is part of what a person trusts: a node may not rewrite it, and a script
changed since it was trusted never runs.

The reproduction: a project ``rein.toml`` runs ``sh hooks/log.sh`` on tool events, the user
trusts it, and a model node (the scripted provider, a named test double) with
``fs:write:**`` rewrites ``hooks/log.sh`` so that it writes outside the workspace, then makes
another tool call so that the hook runs. Hooks run outside the sandbox, so a rewritten
script would write wherever rein may.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from rein.config.command_files import CommandFiles, command_files, pin
from rein.tools.hooks import Hook, HookRunner
from rein.tools.sandbox import bubblewrap_status
from tests.scenarios.model_env import ModelScenario, call, graph, ms_fixture, task

__all__ = ["ms_fixture"]

PROVIDER = ('[policy]\nshell = "allow"\n\n[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
            '[tiers.standard]\nprovider = "script"\nmodel = "s"\n\n')
HOOKS = ('[hooks.log]\ncommand = "sh hooks/log.sh"\n'
         'events = ["PreToolUse", "PostToolUse"]\nmatcher = "shell|file_write"\n')
LOG = '{ cat; echo; } >> "$REIN_PROJECT_DIR/hook-log.jsonl"\n'


@pytest.fixture(name="outside")
def outside_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the workspace, where only a hook could write."""
    return tmp_path_factory.mktemp("outside")


def setup(ms: ModelScenario, turns: list[Any]) -> None:
    ms.file("hooks/log.sh", LOG)
    ms.turns("turns.json", turns)
    ms.toml(PROVIDER + HOOKS)
    code, out = ms.rein("config", "trust", "--json")
    assert code == 4, out
    code, out = ms.rein("config", "trust", "--digest", json.loads(out)["digest"])
    assert code == 0, out


def run(ms: ModelScenario) -> tuple[int, str]:
    node = task("Write", tools=["file_write", "shell"], outputs={"summary": "done"},
                permissions=["fs:write:**", "fs:read:**", "shell:exec"])
    return ms.run(ms.graph("w.agraph.yaml", graph("w", {"write": node}, "write")))


def evil(outside: Path) -> str:
    return f'touch "{outside}/pwned"\ncat > /dev/null\n'


def test_a_node_cannot_rewrite_a_hook_script_with_a_file_tool(
        ms: ModelScenario, outside: Path) -> None:
    setup(ms, [call("file_write", path="hooks/log.sh", content=evil(outside)),
               call("shell", command="echo hi"),
               call("submit_outputs", summary="done")])
    code, out = run(ms)
    assert code in (0, 1), out
    assert not (outside / "pwned").exists()
    assert (ms.root / "hooks/log.sh").read_text() == LOG
    first = ms.items("tool_result")[0]
    assert first["refused"] is True
    assert "hooks/log.sh" in first["content"] and "protected" in first["content"]


def test_a_node_cannot_rewrite_a_hook_script_with_a_shell_command(
        ms: ModelScenario, outside: Path) -> None:
    script = evil(outside).replace('"', '\\"').replace("\n", "\\n")
    setup(ms, [call("shell", command=f'printf "{script}" > hooks/log.sh'),
               call("shell", command="echo hi"),
               call("submit_outputs", summary="done")])
    code, out = run(ms)
    assert code in (0, 1), out
    assert not (outside / "pwned").exists()
    if bubblewrap_status()[0] is not None:  # bound read-only: the write itself fails
        assert (ms.root / "hooks/log.sh").read_text() == LOG


def test_a_script_changed_after_it_was_trusted_does_not_run(
        ms: ModelScenario, outside: Path) -> None:
    setup(ms, [call("shell", command="echo hi"), call("submit_outputs", summary="done")])
    ms.file("hooks/log.sh", evil(outside))
    code, out = run(ms)
    assert code == 0, out
    assert not (outside / "pwned").exists()
    assert not [e for e in ms.events() if e.type.startswith("hook/")]
    code, out = ms.rein("config", "trust", "--json")
    assert code == 4, out
    shown = json.loads(out)
    assert shown["state"] == "changed" and shown["changed_files"] == ["hooks/log.sh"]
    # .stubs/sh too: the scenario's PATH starts inside the workspace, so a sh put there
    # would run in place of the system's.
    assert [f["path"] for f in shown["sections"][0]["files"]] == [".stubs/sh", "hooks/log.sh"]


# -- the runner: pinned files are checked before every run ----------------------------------


def test_the_runner_does_not_run_a_hook_whose_script_changed_and_stops_the_session(
        tmp_path: Path, outside: Path) -> None:
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "log.sh").write_text(LOG)
    pins = pin(tmp_path, ["hooks/log.sh"])
    hook = Hook(name="log", command="sh hooks/log.sh", events=("PreToolUse",), files=pins)
    runner = HookRunner([hook], cwd=tmp_path, session_id="s")
    call = {"tool_name": "shell", "tool_input": {"command": "ls"}}
    first = asyncio.run(runner.run("PreToolUse", call, tool="shell"))
    assert first.stop is None and (tmp_path / "hook-log.jsonl").exists()
    (tmp_path / "hooks" / "log.sh").write_text(evil(outside))
    second = asyncio.run(runner.run("PreToolUse", call, tool="shell"))
    assert not (outside / "pwned").exists()
    assert second.stop == second.blocked == (
        "hook log was not run: hooks/log.sh changed since rein read and trusted its "
        "configuration; review the change, then run `rein config trust` again (for a "
        "project rein.toml) and start the run again")
    assert [r.outcome for r in second.runs] == ["stopped"]


# -- what trust binds ---------------------------------------------------------------------


def test_trust_binds_the_files_a_hook_names_and_its_files_list(ms: ModelScenario) -> None:
    ms.file("hooks/log.sh", ". hooks/lib/common.sh\n")
    ms.file("hooks/lib/common.sh", "cat > /dev/null\n")
    ms.toml(HOOKS + 'files = ["hooks/lib"]\n')
    code, out = ms.rein("config", "trust", "--json")
    assert code == 4, out
    [hook] = json.loads(out)["sections"]
    assert {f["path"] for f in hook["files"]} == {".stubs/sh", "hooks/log.sh", "hooks/lib"}
    code, out = ms.rein("config", "trust", "--digest", json.loads(out)["digest"])
    assert code == 0, out
    # A new file in a listed folder changes what the hook may run: trusted no more.
    ms.file("hooks/lib/json.py", "")
    code, out = ms.rein("config", "trust", "--json")
    shown = json.loads(out)
    assert shown["state"] == "changed" and shown["changed_files"] == ["hooks/lib"]


@pytest.mark.parametrize(("command", "why"), [
    ("sh $SCRIPT", "'$SCRIPT' is computed by the shell when the command runs"),
    ("sh hooks/*.sh", "'hooks/*.sh' is computed by the shell when the command runs"),
    ("sh $(ls hooks)", "does not split with certainty"),
    ("cd hooks && sh log.sh", "'cd' changes the directory the rest of the line runs in"),
])
def test_a_hook_whose_files_cannot_be_told_is_never_trusted(
        ms: ModelScenario, command: str, why: str) -> None:
    ms.file("hooks/log.sh", LOG)
    ms.toml(f'[hooks.log]\ncommand = {json.dumps(command)}\nevents = ["PreToolUse"]\n')
    code, out = ms.rein("config", "trust", "--json")
    error = json.loads(out)["error"]
    assert code == 64 and error["code"] == "CFG016" and why in error["message"]
    assert "write the command as a list" in error["hint"]
    # A notice says why the hook is ignored; nothing was recorded.
    code, out = ms.rein("config", "show")
    assert "hooks.log cannot be trusted" in ms.capsys.readouterr().err + out


def test_the_project_directory_variables_name_the_workspace(tmp_path: Path) -> None:
    found = command_files('"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh < "$REIN_PROJECT_DIR/in"',
                          tmp_path, search_path="/usr/bin")
    assert found == CommandFiles(paths=(".claude/hooks/check.sh", "in"))
    # A list runs without a shell: its words are taken as written, variables included.
    assert command_files(["sh", "-c", "sh hooks/a.sh"], tmp_path,
                         search_path="/usr/bin").paths == ("hooks/a.sh",)


def test_a_matcher_of_star_selects_every_tool(ms: ModelScenario) -> None:
    ms.toml('[hooks.every]\ncommand = "true"\nevents = ["PreToolUse"]\nmatcher = "*"\n')
    code, out = ms.rein("config", "show", "--json")
    assert code == 0, out
    hook = Hook(name="every", command="true", events=("PreToolUse",), matcher="*")
    assert hook.selects("PreToolUse", "shell") and hook.selects("PreToolUse", "mcp__t__x")


def test_a_workspace_that_holds_the_user_configuration_protects_it(ms: ModelScenario) -> None:
    """Run in a home folder, the workspace holds the user rein.toml and the trust records,
    which need no trust: a node writing them would run what it likes next time."""
    user = ".home/.config/rein/rein.toml"
    setup(ms, [call("file_write", path=user, content='[hooks.x]\ncommand = "touch pwned"\n'),
               call("file_write", path=".home/.config/rein/trusted-projects.json",
                    content="{}"),
               call("submit_outputs", summary="done")])
    code, out = run(ms)
    assert code == 0, out
    results = ms.items("tool_result")
    assert [r["refused"] for r in results[:2]] == [True, True]
    assert ".home/.config/rein is protected" in results[0]["content"]
    assert not (ms.root / user).exists()
