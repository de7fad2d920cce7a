"""Hooks act on a conversation turn driven through ``rein app-server`` (raw JSON lines): a
``PreToolUse`` hook that blocks (exit 2) keeps a write from happening and its reason reaches
the model; one that rewrites ``updatedInput`` changes the command that is asked about and
run; and both runs are in the turn's event stream, the one the feed folds."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from rein.store.sqlite import SQLiteStore
from tests.appserver.serve import environment, reply, server_args, shell, workspace
from tests.appserver.test_wire import Raw

GUARD = """path=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"].get("path", ""))')
case "$path" in
  .env|*/.env) echo "$path holds secrets; keep them in the environment" >&2; exit 2 ;;
esac
"""
WRAP = """python3 -c '
import json, sys
args = dict(json.load(sys.stdin)["tool_input"])
args["command"] = "echo wrapped && " + args["command"]
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": args}}))'
"""
HOOKS = """[hooks.guard-env]
command = "sh {root}/guard.sh"
events = ["PreToolUse"]
matcher = "file_write"

[hooks.wrap]
command = "sh {root}/wrap.sh"
events = ["PreToolUse"]
matcher = "shell_exec"
"""


class Hooked(Raw):
    """``rein app-server`` with the hooks in the user's rein.toml (trusted, as a user file
    is; a project file's hooks would need ``rein config trust`` first)."""

    def __init__(self, root: Path, user: Path) -> None:
        self.proc = subprocess.Popen(
            server_args(root), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=root,
            env={**os.environ, **environment(root), "REIN_USER_CONFIG": str(user)})


def write(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "file_write",
                            "arguments": {"path": path, "content": "KEY=1\n"}}]}


def test_a_blocking_and_a_rewriting_hook_act_on_an_app_server_turn(tmp_path: Path) -> None:
    root = workspace(tmp_path, [write(".env"), shell("echo one"), reply("done")])
    (root / "guard.sh").write_text(GUARD)
    (root / "wrap.sh").write_text(WRAP)
    user = tmp_path / "user.toml"
    user.write_text(HOOKS.format(root=root))
    server = Hooked(root, user)
    try:
        server.send({"id": 1, "method": "initialize", "params": {"clientInfo": {
            "name": "t", "version": "1"}}})
        server.read()
        server.send({"id": 2, "method": "thread/start", "params": {}})
        thread = server.until("id", 2)["result"]["thread"]["id"]
        server.send({"id": 3, "method": "turn/start", "params": {
            "threadId": thread, "input": [{"type": "text", "text": "save a key, run one"}]}})
        wire: list[dict[str, Any]] = []
        while True:
            message = server.read()
            wire.append(message)
            if message.get("method") == "item/commandExecution/requestApproval":
                server.send({"id": message["id"], "result": {"decision": "accept"}})
            if message.get("method") == "turn/completed":
                break
        assert server.close() == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()

    # The rewrite is what the person was asked about, and what ran.
    asked = [m for m in wire if m.get("method") == "item/commandExecution/requestApproval"]
    assert [m["params"]["command"] for m in asked] == ["echo wrapped && echo one"]
    done = {m["params"]["item"]["type"]: m["params"]["item"] for m in wire
            if m.get("method") == "item/completed"
            and m["params"]["item"]["type"] in ("commandExecution", "fileChange")}
    command = done["commandExecution"]
    assert command["command"] == "echo wrapped && echo one"
    assert command["status"] == "completed"
    assert command["aggregatedOutput"].split("\n")[:2] == ["wrapped", "one"] or \
        "wrapped\none" in command["aggregatedOutput"]
    # The block kept the write from happening, and was not a silent cancel.
    assert done["fileChange"]["status"] != "completed"
    assert not (root / ".env").exists()
    turn = next(m for m in wire if m.get("method") == "turn/completed")
    assert turn["params"]["turn"]["status"] == "completed"

    store = SQLiteStore(root / ".rein" / "rein.db")
    [run] = store.list_runs()
    events = list(store.events(run.run_id))
    results = [str(e.payload["data"]["content"]) for e in events
               if e.type == "item" and e.payload.get("kind") == "tool_result"]
    assert results[0].startswith("blocked by hook guard-env: .env holds secrets")
    # Each hook run is a started/completed pair in the stream every surface's feed reads.
    runs = [(e.payload["run"]["hook"], e.payload["run"]["status"],
             e.payload["run"].get("outcome")) for e in events if e.type == "hook/completed"]
    assert runs == [("guard-env", "blocked", "blocked"), ("wrap", "completed", "rewrote")]
    assert [e.type for e in events if e.type.startswith("hook/")] == [
        "hook/started", "hook/completed", "hook/started", "hook/completed"]
