"""acpx 0.19.1, an independent ACP client (TypeScript, npm), runs a prompt against
``rein acp``: ``--approve-all`` lets the shell command run (exit 0), in acpx's own terminal
since it grants ``terminal``; ``--deny-all`` rejects it (acpx exits 5, PERMISSION_DENIED) and
no terminal is created. Installed by scripts/acpx.sh; skipped without it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.appserver.serve import environment, reply, shell, workspace

ROOT = Path(__file__).resolve().parents[2]
ACPX = Path(os.environ.get("REIN_ACPX") or ROOT / ".venv" / "acpx" / "node_modules" /
            ".bin" / "acpx")
REIN = Path(sys.executable).parent / "rein"


def _node_major() -> int:
    node = shutil.which("node")
    if node is None:
        return 0
    out = subprocess.run([node, "-p", "process.versions.node.split('.')[0]"],
                         capture_output=True, text=True, check=False)
    return int(out.stdout.strip() or 0)


pytestmark = [
    pytest.mark.skipif(_node_major() < 20, reason="acpx needs Node >= 20 (node missing or "
                                                  "older)"),
    pytest.mark.skipif(not ACPX.exists(), reason="acpx is not installed: bash scripts/acpx.sh"),
    pytest.mark.skipif(not REIN.exists(), reason=f"no rein script beside {sys.executable}"),
]


def acpx(root: Path, policy: str) -> tuple[int, list[dict[str, Any]]]:
    env = {**os.environ, **environment(root)}
    (root / ".home").mkdir(exist_ok=True)  # acpx keeps its state under $HOME/.acpx
    done = subprocess.run(
        [str(ACPX), "--agent", f"{REIN} acp --workspace {root}", "--cwd", str(root),
         "--format", "json", policy, "--timeout", "90", "exec", "run echo one"],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines() if line]


def answer_to(messages: list[dict[str, Any]], asked: dict[str, Any]) -> dict[str, Any]:
    """The client's answer to ``asked`` (ids of the two directions overlap: the first
    response with its id after it)."""
    after = messages[messages.index(asked) + 1:]
    return next(m for m in after if m.get("id") == asked["id"] and "result" in m)


def updates(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["params"]["update"] for m in messages if m.get("method") == "session/update"]


def test_acpx_approve_all_runs_the_command(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo one"), reply("ran one")])
    code, messages = acpx(root, "--approve-all")
    assert code == 0
    [asked] = [m for m in messages if m.get("method") == "session/request_permission"]
    assert asked["params"]["toolCall"]["kind"] == "execute"
    answer = answer_to(messages, asked)
    assert answer["result"]["outcome"]["optionId"] == "allow_once"
    # pending until allowed: nothing said it ran before acpx answered
    call = asked["params"]["toolCall"]["toolCallId"]
    before = updates(messages[:messages.index(asked)])
    assert [u.get("status") for u in before if u.get("toolCallId") == call] == ["pending"]
    done = [u for u in updates(messages) if u["sessionUpdate"] == "tool_call_update"]
    assert done[-1]["status"] == "completed"
    assert "one" in done[-1]["content"][0]["content"]["text"]
    assert messages[-1]["result"] == {"stopReason": "end_turn"}
    # acpx grants `terminal`: the allowed command ran in its terminal, released after.
    methods = [m.get("method") for m in messages if "method" in m]
    ran = [m for m in methods if str(m).startswith("terminal/")]
    assert ran[0] == "terminal/create" and ran[-1] == "terminal/release", ran
    created = next(m for m in messages if m.get("method") == "terminal/create")
    # shown as rein's sandbox launcher and the command, not bwrap's line
    assert created["params"]["command"] == "/bin/sh"
    assert created["params"]["args"][0].endswith("/rein-sandbox")
    assert created["params"]["args"][1:] == ["/bin/sh", "-c", "echo one"]


def test_acpx_deny_all_rejects_the_command(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo one"), reply("it was refused")])
    code, messages = acpx(root, "--deny-all")
    assert code == 5  # acpx: PERMISSION_DENIED
    asked = next(m for m in messages if m.get("method") == "session/request_permission")
    answer = answer_to(messages, asked)
    assert answer["result"]["outcome"]["optionId"] == "reject_once"
    done = [u for u in updates(messages) if u["sessionUpdate"] == "tool_call_update"]
    assert done[-1]["status"] == "failed"
    assert not any(str(m.get("method")).startswith("terminal/") for m in messages)
    assert "it was refused" in "".join(u["content"]["text"] for u in updates(messages)
                                       if u["sessionUpdate"] == "agent_message_chunk")
