"""A graph turn's digest question lives in the approval queue: it survives a SIGKILLed
server (a second process asks it again and the turn goes on), and an answer given with
``rein approvals accept`` in another terminal resolves it on the wire."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.appserver.codex_env import Recorded, client, codex, off_schema, turn_notifications
from tests.appserver.serve import environment, reply, workspace
from tests.appserver.test_graph_turn import GRAPH, MENTION
from tests.appserver.test_wire import Raw


def _accept(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"answers": {params["questions"][0]["id"]: {"answers": ["accept"]}}}


def _graph_workspace(tmp_path: Path) -> Path:
    root = workspace(tmp_path, [reply("shipped")])
    (root / "gated.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    return root


def test_the_digest_question_survives_a_sigkilled_server(tmp_path: Path) -> None:
    root = _graph_workspace(tmp_path)
    holder: dict[str, Any] = {}
    asked_first: list[str] = []

    def kill(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked_first.append(params["questions"][0]["question"])
        os.kill(holder["c"]._proc.pid, signal.SIGKILL)  # while the digest question waits
        holder["c"]._proc.wait()
        return _accept(method, params)

    c = client(root, kill, Recorded())
    holder["c"] = c
    c.start()
    try:
        c.initialize()
        thread = c.thread_start({}).thread.id
        turn = c.turn_start(thread, MENTION).turn.id
        list(turn_notifications(c, turn))
    except (codex.CodexError, OSError):
        pass  # the server died under us
    finally:
        with contextlib.suppress(OSError):
            c.close()
    assert len(asked_first) == 1 and "rein/tests/gated" in asked_first[0]

    second = Recorded()
    with client(root, _accept, second) as c:
        c.initialize()
        resumed = c.thread_resume(thread)
        [pending] = resumed.thread.turns
        assert pending.id == turn and pending.status.value == "inProgress"
        after = list(turn_notifications(c, turn))
    assert second.unknown() == []
    assert off_schema(second) == []
    questions = [p["questions"][0]["question"] for _, p in second.requests]
    assert questions == [asked_first[0], "Ship the release?"]  # asked again, then the gate
    assert after[-1].payload.turn.status.value == "completed"
    final = [n.payload.item.root for n in after if n.method == "item/completed"][-1]
    assert final.text.startswith("run run-") and final.text.endswith(" succeeded")


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from rein.cli import run; sys.exit(run())",
         *args, "--workspace", str(root)], capture_output=True, text=True, timeout=120,
        env={**os.environ, **environment(root)}, cwd=root, check=False)


def test_answering_the_digest_from_the_cli_resolves_it_on_the_wire(tmp_path: Path) -> None:
    root = _graph_workspace(tmp_path)
    raw = Raw(root)
    try:
        raw.send({"id": "i", "method": "initialize", "params": {"clientInfo": {
            "name": "t", "version": "1"}}})
        raw.until("id", "i")
        raw.send({"method": "initialized"})
        raw.send({"id": "t", "method": "thread/start", "params": {}})
        thread = raw.until("id", "t")["result"]["thread"]["id"]
        raw.send({"id": "u", "method": "turn/start", "params": {
            "threadId": thread, "input": MENTION}})
        asked = raw.until("method", "item/tool/requestUserInput")
        listed = _cli(root, "approvals", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        queued = {a["approval_id"] for a in json.loads(listed.stdout)["approvals"]}
        assert asked["id"] in queued  # the question is an entry of the one queue
        shown = _cli(root, "approvals", "show", asked["id"])
        assert shown.returncode == 0, shown.stderr
        assert f"of thread {thread} (no run yet" in shown.stdout
        assert "rein/tests/gated" in shown.stdout

        answered = _cli(root, "approvals", "accept", asked["id"])
        assert answered.returncode == 0, answered.stderr
        resolved = raw.until("method", "serverRequest/resolved")
        assert resolved["params"]["requestId"] == asked["id"]
        gate = raw.until("method", "item/tool/requestUserInput")
        assert gate["params"]["questions"][0]["question"] == "Ship the release?"
        raw.send({"id": gate["id"], "result": {"answers": {
            gate["params"]["questions"][0]["id"]: {"answers": ["accept"]}}}})
        done = raw.until("method", "turn/completed")
        assert done["params"]["turn"]["status"] == "completed"
        assert raw.close() == 0
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
            raw.proc.wait()


def test_a_graph_changed_after_its_digest_was_accepted_ends_the_turn_failed(
        tmp_path: Path) -> None:
    root = _graph_workspace(tmp_path)
    first = Raw(root)
    first.send({"id": "i", "method": "initialize", "params": {"clientInfo": {
        "name": "t", "version": "1"}}})
    first.until("id", "i")
    first.send({"id": "t", "method": "thread/start", "params": {}})
    thread = first.until("id", "t")["result"]["thread"]["id"]
    first.send({"id": "u", "method": "turn/start", "params": {"threadId": thread,
                                                               "input": MENTION}})
    turn = first.until("id", "u")["result"]["turn"]["id"]
    asked = first.until("method", "item/tool/requestUserInput")
    assert first.close() == 0  # gone while the digest question waits
    answered = _cli(root, "approvals", "accept", asked["id"])
    assert answered.returncode == 0, answered.stderr
    graph = root / "gated.agraph.yaml"  # changed after the digest was accepted
    graph.write_text(yaml.safe_dump({**yaml.safe_load(graph.read_text()),
                                     "title": "changed after it was accepted"}))

    seen = Recorded()
    with client(root, _accept, seen) as c:  # the SDK resumes the thread: the turn's run
        c.initialize()                      # would run a graph nobody accepted
        c.thread_resume(thread)
        notes = list(turn_notifications(c, turn))
        read = c.thread_read(thread, include_turns=True).thread
    assert seen.unknown() == [] and off_schema(seen) == [] and seen.requests == []
    [error] = [n.payload.error for n in notes if n.method == "error"]
    ended = notes[-1].payload.turn
    assert ended.status.value == "failed" and ended.error == error
    assert error.message.startswith("APPROVAL_STALE: ")
    assert [t.status.value for t in read.turns] == ["failed"]
    assert read.status.root.type == "idle"
