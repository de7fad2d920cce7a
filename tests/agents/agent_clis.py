"""The real agent CLIs, run offline against the scripted model server, in their default
configurations: the Codex CLI in its ``workspace-write`` sandbox, Claude Code with its
sandbox off (its default) or on.

Installed by scripts/agent-clis.sh into ``.venv/agents`` (``make test`` runs it); a test
skips with the reason when one is missing. Each run gets a home, a configuration folder and
a temporary folder of its own, and a PATH as a user who activated rein's virtual
environment would have it: rein's ``bin`` first, then the system's. (The agent's login shell
resets PATH, which is why the instruction files name ``.rein/bin/rein``.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import ROOT

PREFIX = Path(os.environ.get("REIN_AGENT_CLIS") or ROOT / ".venv" / "agents")
CODEX = PREFIX / "node_modules" / ".bin" / "codex"
CLAUDE = PREFIX / "node_modules" / ".bin" / "claude"
# Where Claude Code's install script links its binary from, when the script did not run.
CLAUDE_NATIVE = PREFIX / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
REIN_BIN = Path(sys.executable).parent  # the virtual environment the suite runs in
GUARD = 600  # seconds: only a guard against a hang; a run takes a few seconds


def _works(argv: list[str]) -> bool:
    try:
        done = subprocess.run([*argv, "--version"], capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def codex_missing() -> str | None:
    """Why the Codex CLI cannot run here, or ``None``."""
    if not CODEX.exists():
        return "the Codex CLI is not installed: bash scripts/agent-clis.sh"
    if not _works([str(CODEX)]):
        return "the Codex CLI does not start here"
    return None


def claude_binary() -> Path | None:
    for candidate in (CLAUDE, CLAUDE_NATIVE):
        if candidate.exists() and _works([str(candidate)]):
            return candidate
    return None


def claude_missing() -> str | None:
    """Why Claude Code cannot run here, or ``None``."""
    if claude_binary() is None:
        return "Claude Code is not installed (or does not start): bash scripts/agent-clis.sh"
    return None


def sandbox_missing() -> str | None:
    """Why an agent's bubblewrap sandbox cannot run here, or ``None``."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (make system-deps)"
    done = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-user", "--unshare-net",
                           "true"], capture_output=True, check=False)
    if done.returncode != 0:
        return "bubblewrap cannot make a namespace here: " + done.stderr.decode()[-200:]
    return None


@dataclass
class AgentRun:
    """What one agent process did."""

    code: int
    stdout: str
    stderr: str
    home: Path

    def json_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.stdout.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


def _base_env(root: Path) -> dict[str, str]:
    home, tmp = root / "home", root / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    return {"PATH": f"{REIN_BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
            "TMPDIR": str(tmp), "LANG": "C.UTF-8"}


def run_codex(repo: Path, root: Path, model_url: str, prompt: str) -> AgentRun:
    """``codex exec`` in ``repo``, sandbox ``workspace-write`` (its default for exec),
    against the scripted model at ``model_url``. ``root`` holds its home and state."""
    env = _base_env(root)
    codex_home = root / "codexhome"
    codex_home.mkdir(exist_ok=True)
    env.update({"CODEX_HOME": str(codex_home), "SCRIPTED_MODEL_KEY": "scripted"})
    provider = (f'model_providers.scripted={{name="scripted",base_url="{model_url}/v1",'
                'wire_api="responses",env_key="SCRIPTED_MODEL_KEY"}')
    argv = [str(CODEX), "exec", "-s", "workspace-write", "--json",
            "-c", "features.plugins=false",  # no plugin sync over the network
            "-c", "model=scripted-model", "-c", "model_provider=scripted", "-c", provider,
            prompt]
    done = subprocess.run(argv, cwd=repo, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=GUARD, check=False)
    return AgentRun(done.returncode, done.stdout, done.stderr, codex_home)


def run_claude(repo: Path, root: Path, model_url: str, prompt: str, *,
               sandbox: bool = False) -> AgentRun:
    """``claude -p`` in ``repo`` against the scripted model; its shell and file tools
    allowed, as a user allows them. With ``sandbox``, Claude Code's own sandbox is on (and required)."""
    binary = claude_binary()
    assert binary is not None
    env = _base_env(root)
    env.update({"ANTHROPIC_BASE_URL": model_url, "ANTHROPIC_API_KEY": "sk-ant-scripted",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
    argv = [str(binary), "-p", prompt, "--output-format", "json",
            "--allowedTools", "Bash,Read,Write"]
    if sandbox:
        argv += ["--settings", json.dumps({"sandbox": {
            "enabled": True, "autoAllowBashIfSandboxed": True, "failIfUnavailable": True}})]
    done = subprocess.run(argv, cwd=repo, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=GUARD, check=False)
    return AgentRun(done.returncode, done.stdout, done.stderr, Path(env["HOME"]) / ".claude")


def tool_output(text: str) -> str:
    """What a command printed, from a tool result: the Codex CLI puts a header before it
    (``Chunk ID: ...`` up to ``Output:``); Claude Code gives the output alone."""
    marker = "\nOutput:\n"
    if text.startswith("Chunk ID:") and marker in text:
        return text.split(marker, 1)[1]
    return text


__all__ = ["CLAUDE", "CODEX", "REIN_BIN", "AgentRun", "claude_missing", "codex_missing", "run_claude",
           "run_codex", "sandbox_missing", "tool_output"]
