"""``command/exec`` from the official SDK: decided as a turn's shell tool call is, under
the named thread's sandbox and approval policy. A command rein.toml refuses, one a person
declines, one under ``approvalPolicy: never``, an asked one of no thread and one whose
client leaves unanswered do not run; an accepted one runs confined (it writes nothing outside the workspace); an answer given with
``rein approvals accept`` in another terminal decides as the client's would. Every message
rein sends is valid by Codex's own schema."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from openai_codex.generated import v2_all as codex_types

from rein.store.sqlite import SQLiteStore
from rein.tools.sandbox import bubblewrap_status
from tests.appserver.codex_env import Recorded, client, off_codex
from tests.appserver.serve import environment, workspace
from tests.appserver.test_wire import Raw


def exec_(c: Any, seen: Recorded, params: dict[str, Any]) -> Any:
    """The result, or the error's ``data`` (its code and hint) when rein refused."""
    try:
        return c.request("command/exec", params, response_model=codex_types.CommandExecResponse)
    except Exception:  # noqa: BLE001 - the error is read from the wire below
        errors = [m for m in seen.wire if "error" in m and seen.sent.get(m["id"])
                  == "command/exec"]
        return errors[-1]["error"]["data"]


def accept_in_another_terminal(root: Path, approval_id: str) -> None:
    program = "import sys; from rein.cli import run; sys.exit(run())"
    env = {**os.environ, **environment(root)}
    shown = subprocess.run([sys.executable, "-c", program, "approvals", "list",
                            "--workspace", str(root)], check=True, capture_output=True,
                           text=True, env=env).stdout
    assert approval_id in shown and "thread " in shown  # the queue shows it, a thread's
    detail = subprocess.run([sys.executable, "-c", program, "approvals", "show", approval_id,
                             "--workspace", str(root)], check=True, capture_output=True,
                            text=True, env=env).stdout
    assert "runs     touch elsewhere" in detail and "command/exec" in detail
    subprocess.run([sys.executable, "-c", program, "approvals", "accept", approval_id,
                    "--workspace", str(root)], check=True, capture_output=True, env=env)


def test_command_exec_asks_and_runs_as_the_thread_s_shell_call_would(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    root = workspace(tmp_path / "ws", [])
    outside = tmp_path / "outside"
    outside.mkdir()
    answers = iter(["accept", "decline", "accept", "elsewhere"])
    seen = Recorded()

    def decide(method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = next(answers)
        if answer == "elsewhere":  # `rein approvals accept` first; this late decline loses
            asking = [m for m in seen.wire if m.get("method") == method]
            accept_in_another_terminal(root, asking[-1]["id"])
            return {"decision": "decline"}
        return {"decision": answer}

    with client(root, decide, seen) as c:
        c.initialize()
        thread = c.thread_start({}).thread.id
        never = c.thread_start({"approvalPolicy": "never"}).thread.id
        ran = exec_(c, seen, {"command": ["sh", "-c", "echo out; echo err >&2; touch made"],
                              "threadId": thread})
        declined = exec_(c, seen, {"command": ["touch", "declined"], "threadId": thread})
        escape = f"touch {outside}/escaped; touch inside"
        confined = exec_(c, seen, {"command": ["sh", "-c", escape], "threadId": thread})
        elsewhere = exec_(c, seen, {"command": ["touch", "elsewhere"], "threadId": thread})
        unasked = exec_(c, seen, {"command": ["touch", "never"], "threadId": never})
        threadless = exec_(c, seen, {"command": ["touch", "threadless"]})

    assert off_codex(seen) == []
    asked = [m for m in seen.wire if m.get("method") == "item/commandExecution/requestApproval"]
    assert [m["params"]["command"] for m in asked] == [
        "sh -c 'echo out; echo err >&2; touch made'", "touch declined",
        f"sh -c 'touch {outside}/escaped; touch inside'", "touch elsewhere"]
    assert all(m["params"]["threadId"] == thread and m["id"].startswith("apv-") for m in asked)
    assert (ran.exit_code, ran.stdout, ran.stderr) == (0, "out\n", "err\n")
    assert (root / "made").exists()
    assert declined["code"] == "THREAD010" and not (root / "declined").exists()
    assert unasked["code"] == "THREAD010" and not (root / "never").exists()
    assert threadless["code"] == "THREAD010" and not (root / "threadless").exists()
    assert elsewhere.exit_code == 0 and (root / "elsewhere").exists()
    resolved = [n["params"]["requestId"] for n in seen.raw
                if n["method"] == "serverRequest/resolved"]
    lost = [n["params"]["message"] for n in seen.raw if n["method"] == "warning"]
    # The accept given elsewhere wins whichever the server hears first: its own question
    # withdrawn (serverRequest/resolved), or the client's late decline, which loses and is
    # said to have lost.
    assert resolved == [asked[3]["id"]] or (resolved == [] and any(
        asked[3]["id"] in message and "accepted" in message for message in lost)), (
        resolved, lost)
    assert (root / "inside").exists()
    if bubblewrap_status()[0] is not None:  # confined: nothing outside the workspace changes
        assert "escaped" in confined.stderr and not (outside / "escaped").exists()


def test_a_command_rein_toml_refuses_is_never_run_nor_asked(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[policy]\nshell = "deny"\n')
    seen = Recorded()
    with client(root, lambda m, p: {"decision": "accept"}, seen) as c:
        c.initialize()
        thread = c.thread_start({}).thread.id
        refused = exec_(c, seen, {"command": ["touch", "refused"], "threadId": thread})
    assert refused["code"] == "THREAD010" and not (root / "refused").exists()
    assert seen.requests == [] and off_codex(seen) == []


def test_a_command_rein_toml_allows_runs_without_asking(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[policy]\nshell = "allow"\n')
    seen = Recorded()
    with client(root, lambda m, p: {"decision": "decline"}, seen) as c:
        c.initialize()
        ran = exec_(c, seen, {"command": ["sh", "-c", "echo $FOO; pwd"], "env": {"FOO": "bar"},
                              "cwd": str(root)})
        outside = exec_(c, seen, {"command": ["true"], "cwd": str(tmp_path.parent)})
        streamed = exec_(c, seen, {"command": ["true"], "tty": True})
    assert (ran.exit_code, ran.stdout) == (0, f"bar\n{root}\n")
    assert outside["code"] == "THREAD002" and streamed["code"] == "THREAD007"
    assert seen.requests == [] and off_codex(seen) == []


def test_a_client_that_leaves_unanswered_runs_nothing_and_the_server_exits(tmp_path: Path
                                                                          ) -> None:
    root = workspace(tmp_path, [])
    raw = Raw(root)
    raw.send({"id": 1, "method": "initialize", "params": {"clientInfo": {
        "name": "t", "version": "1"}}})
    raw.send({"method": "initialized"})
    raw.send({"id": 2, "method": "thread/start", "params": {}})
    thread = raw.until("id", 2)["result"]["thread"]["id"]
    raw.send({"id": 3, "method": "command/exec", "params": {
        "command": ["touch", "left"], "threadId": thread}})
    asked = raw.until("method", "item/commandExecution/requestApproval")
    assert raw.close() == 0  # gone without answering: the server does not wait on it
    store = SQLiteStore(root / ".rein" / "rein.db")
    try:
        row = store.get_approval(asked["id"])
    finally:
        store.close()
    assert row is not None and row.status.value == "cancelled"
    assert not (root / "left").exists()
