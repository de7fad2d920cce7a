"""The real agent CLIs drive a driver run to its end, from inside their own sandboxes.

The Codex CLI in its default ``workspace-write`` sandbox (bubblewrap and a seccomp filter
that, among others, denies sending on sockets), Claude Code without and with its sandbox.
Each talks to the scripted model server (a test double), whose answers follow the
instruction file ``rein init --agent`` wrote: ``.rein/bin/rein next``, the work, the
envelope on ``.rein/bin/rein submit -``. A person (the test, outside any sandbox) answers
the gate; a second session then finds the run done.
"""

from __future__ import annotations

import json
import shutil
import subprocess
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
    tool_output,
)
from agent_policy import Driver
from scripted_model import ScriptedModel

GRAPH = Path(__file__).with_name("greet.agraph.yaml")
GREET = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'
PROMPT = "Drive the rein run in this repository as AGENTS.md and CLAUDE.md say."


def rein(root: Path, *args: str) -> tuple[int, str]:
    """The person's rein, outside the agent's sandbox."""
    done = subprocess.run([str(REIN_BIN / "rein"), *args], cwd=root,
                          capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, done.stdout + done.stderr


def workspace(tmp_path: Path, agent: str) -> Path:
    """A git repository the person set up: the instruction file written, the run started
    (it waits for the agent)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    shutil.copy(GRAPH, repo / GRAPH.name)
    code, said = rein(repo, "init", "--agent", agent)
    assert code == 0, said
    digest = rein(repo, "graph", "digest", GRAPH.name)[1].strip()
    code, said = rein(repo, "run", GRAPH.name, "--approve", digest)
    assert code == 3, said  # waiting for the driver
    return repo


def greet_work(instruction: Mapping[str, Any]) -> dict[str, str]:
    assert instruction["node"] == "write_module", instruction
    return {"greet.py": GREET}


def greet_outputs(instruction: Mapping[str, Any]) -> dict[str, Any]:
    return {"module": "greet.py"}


def run_status(repo: Path) -> str:
    code, out = rein(repo, "runs", "list", "--json")
    assert code == 0, out
    return str(json.loads(out)["runs"][0]["status"])


def drive(repo: Path, tmp_path: Path, agent: Callable[[Path, Path, str], AgentRun]
          ) -> tuple[Driver, AgentRun, ScriptedModel]:
    # Claude Code writes files with its file tool, as CLAUDE.md says; Codex has a shell.
    file_tool = repo if agent is not codex else None
    policy = Driver(greet_work, greet_outputs, file_tool=file_tool)
    with ScriptedModel(policy) as model:
        done = agent(repo, tmp_path, model.url)
    return policy, done, model


def outputs_seen(model: ScriptedModel) -> list[str]:
    """The tool outputs of the model's last request: what every command printed."""
    last = model.exchanges[-1]
    items = last.body.get("input")
    if isinstance(items, list):  # Responses
        return [tool_output(str(i.get("output"))) for i in items
                if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return [str(b.get("content")) for m in last.body.get("messages") or []
            if isinstance(m.get("content"), list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"]


def check_session(policy: Driver, model: ScriptedModel, *, confined: bool) -> list[str]:
    said = outputs_seen(model)
    probe = said[0]
    assert ("NoNewPrivs:\t1" in probe) is confined, probe
    assert policy.instructions and policy.instructions[0]["node"] == "write_module", said
    submitted = [s for s in said if "submit: accepted" in s]
    assert submitted, said  # the envelope on stdin was taken as it was
    refused = [s for s in said if "REFUSED" in s]
    assert refused == [], refused  # no sandbox artefact was taken for a write
    assert policy.stopped_on is not None and policy.stopped_on["status"] == "waiting" and \
        policy.stopped_on["for"] == "approval", (policy.stopped_on, said)
    return said


def finish(repo: Path, tmp_path: Path, agent: Callable[[Path, Path, str], AgentRun]
           ) -> None:
    """The person accepts the gate; a second session of the agent finds the run done."""
    code, out = rein(repo, "approvals", "list", "--json")
    approval = json.loads(out)["approvals"][0]["approval_id"]
    code, out = rein(repo, "approvals", "accept", approval)
    assert code == 0, out
    assert run_status(repo) == "succeeded"
    policy, done, _ = drive(repo, tmp_path / "again", agent)
    assert done.code == 0, done.stderr[-2000:]
    assert policy.stopped_on is not None and policy.stopped_on["status"] == "done", \
        policy.stopped_on


def codex(repo: Path, root: Path, url: str) -> AgentRun:
    root.mkdir(exist_ok=True)
    return run_codex(repo, root, url, PROMPT)


@pytest.mark.skipif(bool(codex_missing() or sandbox_missing()),
                    reason=str(codex_missing() or sandbox_missing()))
def test_the_codex_cli_in_its_workspace_write_sandbox_drives_a_run_to_its_end(
        tmp_path: Path) -> None:
    repo = workspace(tmp_path, "codex")
    policy, done, model = drive(repo, tmp_path / "first", codex)
    assert done.code == 0, done.stderr[-2000:]
    check_session(policy, model, confined=True)
    assert run_status(repo) == "awaiting_human"
    assert (repo / "greet.py").read_text() == GREET
    finish(repo, tmp_path, codex)


def claude(sandbox: bool) -> Callable[[Path, Path, str], AgentRun]:
    def run(repo: Path, root: Path, url: str) -> AgentRun:
        root.mkdir(exist_ok=True)
        return run_claude(repo, root, url, PROMPT, sandbox=sandbox)

    return run


@pytest.mark.skipif(bool(claude_missing()), reason=str(claude_missing()))
def test_claude_code_without_its_sandbox_drives_a_run_to_its_end(tmp_path: Path) -> None:
    repo = workspace(tmp_path, "claude")
    policy, done, model = drive(repo, tmp_path / "first", claude(False))
    assert done.code == 0, done.stderr[-2000:]
    check_session(policy, model, confined=False)
    finish(repo, tmp_path, claude(False))


@pytest.mark.skipif(bool(claude_missing() or sandbox_missing()
                         or not shutil.which("socat")),
                    reason=str(claude_missing() or sandbox_missing()
                               or "Claude Code's sandbox needs socat (make system-deps)"))
def test_claude_code_in_its_sandbox_drives_a_run_to_its_end(tmp_path: Path) -> None:
    repo = workspace(tmp_path, "claude")
    policy, done, model = drive(repo, tmp_path / "first", claude(True))
    assert done.code == 0, done.stderr[-2000:]
    check_session(policy, model, confined=True)
    finish(repo, tmp_path, claude(True))

