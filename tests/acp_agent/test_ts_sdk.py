"""The official ACP TypeScript SDK (``@agentclientprotocol/sdk`` 2.4.0, whose schema makes
``session/resume``, ``session/close`` and ``session/delete`` stable) drives ``rein acp`` as an
editor would (``ts_client.mjs``): every message rein sends passes the SDK's own schema; the
shell call is ``pending`` while its permission is asked; the editor's terminal is given the
command after rein's sandbox launcher, never bwrap's line; ``usage_update`` carries the last
request's tokens out of the declared window; and a session closes, resumes (no history
replayed before the answer), prompts again and is deleted. Installed by scripts/acpx.sh;
skipped without it."""

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
SDK = Path(os.environ.get("REIN_ACP_TS_SDK") or ROOT / ".venv" / "acp-ts" / "node_modules" /
           "@agentclientprotocol" / "sdk")
CLIENT = Path(__file__).with_name("ts_client.mjs")
WAIT = 300  # seconds the whole conversation may take: a hang fails, never stalls

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not (SDK / "package.json").exists(),
                       reason="the ACP TypeScript SDK is not installed: bash scripts/acpx.sh"),
]


def converse(root: Path) -> dict[str, Any]:
    agent = [sys.executable, "-c", "import sys; from rein.cli import run; sys.exit(run())",
             "acp", "--workspace", str(root)]
    done = subprocess.run(["node", str(CLIENT), str(SDK), str(root), *agent],
                          capture_output=True, text=True, timeout=WAIT, check=False,
                          env={**os.environ, **environment(root)})
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def test_the_typescript_sdk_drives_a_whole_session(tmp_path: Path) -> None:
    version = json.loads((SDK / "package.json").read_text())["version"]
    assert version == "2.4.0"
    turns = [{**shell("echo from-ts"), "usage": {"input": 120, "output": 30}},
             {**reply("ran it"), "usage": {"input": 400, "output": 50}},
             {**reply("again"), "usage": {"input": 500, "output": 20}}]
    root = workspace(tmp_path, turns)
    toml = (root / "rein.toml").read_text()
    (root / "rein.toml").write_text(toml.replace('model = "scripted-1"\n',
                                                 'model = "scripted-1"\n'
                                                 'context_tokens = 200000\n'))
    seen = converse(root)

    assert seen["invalid"] == []  # every response by the SDK's schema
    replies = seen["responses"]
    assert replies["prompt"]["stopReason"] == "end_turn"
    caps = replies["initialize"]["agentCapabilities"]["sessionCapabilities"]
    assert {"resume", "close", "delete"} <= set(caps)
    # asked while pending; allowed once; then run in this editor's terminal
    [asked] = seen["asked"]
    assert asked["statusWhenAsked"] == "pending"
    assert asked["toolCall"]["kind"] == "execute"
    [terminal] = seen["terminals"]
    assert terminal[0] == "/bin/sh" and terminal[1].endswith("/rein-sandbox")
    assert terminal[2:] == ["/bin/sh", "-c", "echo from-ts"]
    calls = [u for u in seen["updates"] if u.get("toolCallId") == asked["toolCall"]
             ["toolCallId"]]
    assert [u.get("status") for u in calls] == ["pending", "in_progress", "completed"]
    assert "from-ts" in json.dumps(calls[-1]["content"])
    usage = [(u["used"], u["size"]) for u in seen["updates"]
             if u["sessionUpdate"] == "usage_update"]
    assert usage == [(150, 200000), (450, 200000), (520, 200000)]
    # closed: a prompt is refused; resumed without replaying; prompts again; deleted
    assert [name for name, *_ in seen["errors"]] == ["closed prompt"]
    assert seen["updatesBeforeResumeAnswer"] == 0
    assert replies["prompt again"]["stopReason"] == "end_turn"
    session = replies["new"]["sessionId"]
    assert [s["sessionId"] for s in replies["list"]["sessions"]] == [session]
    assert replies["list after"]["sessions"] == []
