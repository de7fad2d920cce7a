"""The real agent CLIs take a small brief through `rein dev` to committed, verified code.

As in test_driver_runs.py, the scripted model server (a test double) answers with the
commands the instruction file teaches; a person (the test) approves the plan. The brief
has one feature; the agent writes the plan, then the feature and its test, and rein checks
the plan, runs the verify itself and commits the feature itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from agent_clis import (
    REIN_BIN,
    AgentRun,
    claude_missing,
    codex_missing,
    run_claude,
    run_codex,
    sandbox_missing,
)
from agent_policy import Driver
from scripted_model import ScriptedModel

BRIEF = "# tempconv\n\nA small Python package that converts Celsius to Fahrenheit.\n"
PLAN = {"features": [{
    "id": "c_to_f", "title": "Celsius to Fahrenheit", "priority": 1,
    "description": "tempconv.c_to_f(c) returns the temperature in Fahrenheit.",
    "context": {"files": ["tempconv/__init__.py", "tests/test_c_to_f.py"],
                "acceptance": ["c_to_f(100) == 212"]},
    "verify": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "tests/test_c_to_f.py"]}]}
CODE = "def c_to_f(c):\n    return c * 9 / 5 + 32\n"
TEST = "from tempconv import c_to_f\n\n\ndef test_boiling():\n    assert c_to_f(100) == 212\n"
pytestmark = pytest.mark.timeout(600)  # a flow is a few agent sessions of a few seconds each

PROMPT = "Use the rein development flow for the brief in specs/, as AGENTS.md/CLAUDE.md say."


def rein(root: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run([str(REIN_BIN / "rein"), *args], cwd=root, capture_output=True,
                          text=True, timeout=120, check=False)
    return done.returncode, done.stdout + done.stderr


def git(root: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          check=check).stdout


def workspace(tmp_path: Path, agent: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    (repo / "specs" / "brief.md").write_text(BRIEF)
    git(repo, "init", "-q")
    code, said = rein(repo, "init", "--agent", agent)
    assert code == 0, said
    return repo


def work(instruction: Mapping[str, Any]) -> dict[str, str]:
    if instruction["node"] == "plan":
        return {".rein/dev/plan.json": json.dumps(PLAN) + "\n"}
    assert instruction["node"] == "feature_c_to_f", instruction
    return {"tempconv/__init__.py": CODE, "tests/test_c_to_f.py": TEST}


def outputs(instruction: Mapping[str, Any]) -> dict[str, Any]:
    if instruction["node"] == "plan":
        return {"plan": ".rein/dev/plan.json"}
    return {"summary": "c_to_f"}


def session(repo: Path, root: Path, agent: Callable[[Path, Path, str], AgentRun],
            file_tool: bool) -> Driver:
    policy = Driver(work, outputs, entry="dev --json", file_tool=repo if file_tool else None)
    root.mkdir(parents=True, exist_ok=True)
    with ScriptedModel(policy) as model:
        done = agent(repo, root, model.url)
    assert done.code == 0, done.stderr[-3000:]
    assert model.exchanges, done.stderr[-3000:]
    return policy


def take_the_flow_through(tmp_path: Path, agent_name: str,
                          agent: Callable[[Path, Path, str], AgentRun], file_tool: bool,
                          kept_back: bool = False) -> Path:
    repo = workspace(tmp_path, agent_name)
    first = session(repo, tmp_path / "s1", agent, file_tool)
    assert [i["node"] for i in first.instructions] == ["plan"], first.stopped_on
    assert first.stopped_on is not None and \
        first.stopped_on["instruction"].get("for") == "approval", first.stopped_on
    # A person approves the plan (outside the agent's sandbox).
    code, out = rein(repo, "approvals", "list", "--json")
    pending = [a for a in json.loads(out)["approvals"] if a["status"] == "pending"]
    assert len(pending) == 1, out
    code, out = rein(repo, "approvals", "accept", pending[0]["approval_id"])
    assert code == 0, out
    second = session(repo, tmp_path / "s2", agent, file_tool)
    assert [i["node"] for i in second.instructions] == ["feature_c_to_f"], second.stopped_on
    assert second.stopped_on is not None and second.stopped_on["reason"] == "done", \
        second.stopped_on
    if kept_back:  # .git was read-only in the sandbox: the commit waits in .rein/dev/git
        assert git(repo, "log", "--format=%s", check=False) == ""
        assert any("wait in .rein/dev/git" in n for n in second.stopped_on["notices"]), \
            second.stopped_on["notices"]
        code, out = rein(repo, "dev", "--json")  # the person, outside the sandbox
        assert code == 0, out
        assert any(n.startswith("wrote 1 feature commit(s) into .git") for n in
                   json.loads(out)["notices"]), out
        assert not (repo / ".rein" / "dev" / "git").exists()
    assert git(repo, "log", "--format=%s").splitlines() == [
        "feat(dev): feature c_to_f - Celsius to Fahrenheit"]
    assert git(repo, "show", "HEAD:tempconv/__init__.py") == CODE
    assert git(repo, "status", "--porcelain") == ""
    return repo


def codex(repo: Path, root: Path, url: str) -> AgentRun:
    return run_codex(repo, root, url, PROMPT)


def claude(sandbox: bool) -> Callable[[Path, Path, str], AgentRun]:
    def run(repo: Path, root: Path, url: str) -> AgentRun:
        return run_claude(repo, root, url, PROMPT, sandbox=sandbox)

    return run


@pytest.mark.skipif(bool(codex_missing() or sandbox_missing()),
                    reason=str(codex_missing() or sandbox_missing()))
def test_the_codex_cli_in_its_workspace_write_sandbox_takes_a_brief_through_rein_dev(
        tmp_path: Path) -> None:
    # Codex keeps .git read-only: rein builds the commit in .rein/dev/git, and the person's
    # next `rein dev`, outside the sandbox, writes it into .git.
    take_the_flow_through(tmp_path, "codex", codex, file_tool=False, kept_back=True)


@pytest.mark.skipif(bool(claude_missing()), reason=str(claude_missing()))
def test_claude_code_without_its_sandbox_takes_a_brief_through_rein_dev(
        tmp_path: Path) -> None:
    take_the_flow_through(tmp_path, "claude", claude(False), file_tool=True)


@pytest.mark.skipif(bool(claude_missing() or sandbox_missing()),
                    reason=str(claude_missing() or sandbox_missing()))
def test_claude_code_in_its_sandbox_takes_a_brief_through_rein_dev(tmp_path: Path) -> None:
    take_the_flow_through(tmp_path, "claude", claude(True), file_tool=True)
