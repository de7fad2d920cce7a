"""Every turn ends with exactly one ``turn/completed``: one whose run is refused before it
starts ends ``failed`` with the error; one whose server was killed between recording it and
starting its run ends ``interrupted`` (THREAD008); one its server left waiting is
interrupted by a later server. Each end is recorded: a restarted server reads the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.appserver.serve import environment, reply, shell, workspace
from tests.appserver.test_wire import Raw

REFUSED = "SCALE001: [executor] kind 'nonesuch' is not one of in_process, dbos"
HINT = 'kind = "dbos" or kind = "in_process"'


def refusing(root: Path) -> Path:
    """A workspace whose executor a run cannot use: every turn's run is refused."""
    workspace(root, [reply("never said")])
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[executor]\nkind = "nonesuch"\n')
    return root


def handshake(raw: Raw) -> str:
    raw.send({"id": "init", "method": "initialize", "params": {"clientInfo": {
        "name": "t", "version": "1"}, "capabilities": {
            "optOutNotificationMethods": ["thread/started"]}}})
    raw.until("id", "init")
    raw.send({"id": "start", "method": "thread/start", "params": {}})
    return str(raw.until("id", "start")["result"]["thread"]["id"])


def turn(raw: Raw, thread: str, text: str) -> tuple[str, list[dict[str, Any]]]:
    """Start a turn; its id and every message up to the thread's next idle status."""
    raw.send({"id": text, "method": "turn/start", "params": {
        "threadId": thread, "input": [{"type": "text", "text": text}]}})
    turn_id = str(raw.until("id", text)["result"]["turn"]["id"])
    seen = []
    while not seen or seen[-1].get("params", {}).get("status") != {"type": "idle"}:
        seen.append(raw.read())
    return turn_id, seen


def read(raw: Raw, thread: str) -> dict[str, Any]:
    raw.send({"id": "read", "method": "thread/read", "params": {
        "threadId": thread, "includeTurns": True}})
    return dict(raw.until("id", "read")["result"]["thread"])


def test_a_turn_whose_run_is_refused_ends_failed_with_its_error(tmp_path: Path) -> None:
    root = refusing(tmp_path)
    raw = Raw(root)
    thread = handshake(raw)
    first, seen = turn(raw, thread, "hello")
    methods = [m.get("method") for m in seen]
    assert methods.count("turn/completed") == 1 and methods[-2:] == [
        "turn/completed", "thread/status/changed"]
    [error] = [m["params"] for m in seen if m.get("method") == "error"]
    assert error == {"threadId": thread, "turnId": first, "willRetry": False,
                     "error": {"message": REFUSED, "additionalDetails": HINT}}
    ended = seen[-2]["params"]["turn"]
    assert (ended["id"], ended["status"], ended["error"]) == (
        first, "failed", {"message": REFUSED, "additionalDetails": HINT})
    # The thread is idle: the next turn is taken, and ends the same way.
    second, seen = turn(raw, thread, "again")
    assert [m["params"]["turn"]["status"] for m in seen
            if m.get("method") == "turn/completed"] == ["failed"]
    assert [(t["id"], t["status"]) for t in read(raw, thread)["turns"]] == [
        (first, "failed"), (second, "failed")]
    assert raw.close() == 0

    again = Raw(root)  # another server reads the same record
    handshake(again)
    stored = read(again, thread)
    assert stored["status"] == {"type": "idle"}
    assert [(t["status"], t["error"]) for t in stored["turns"]] == [
        ("failed", {"message": REFUSED, "additionalDetails": HINT})] * 2
    assert again.close() == 0


# Records a turn as turn/start does, then dies before its run can start (SIGKILL).
RECORD_AND_DIE = """
import asyncio, os, signal, sys
from rein.engine.service import Harness

async def main():
    harness = Harness.open(sys.argv[1])
    thread = harness.sessions.start_thread()
    turn = await harness.sessions.begin_turn(thread.thread_id,
                                             [{"type": "text", "text": "hello"}])
    print(thread.thread_id, turn.turn_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


def killed_after_turn_start(root: Path) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-c", RECORD_AND_DIE, str(root)], cwd=root,
                          env={**os.environ, **environment(root)}, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == -9, done.stderr
    thread, turn_id = done.stdout.split()
    return thread, turn_id


def test_a_turn_its_server_died_before_starting_ends_interrupted(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("hello again")])
    thread, lost = killed_after_turn_start(root)
    raw = Raw(root)
    handshake(raw)
    raw.send({"id": "resume", "method": "thread/resume", "params": {"threadId": thread}})
    resumed = raw.until("id", "resume")["result"]["thread"]
    assert resumed["status"] == {"type": "idle"}
    [shown] = resumed["turns"]
    assert (shown["id"], shown["status"]) == (lost, "interrupted")
    assert shown["error"] == {
        "message": f"THREAD008: turn {lost} never started its run: the process serving it "
                   "stopped first, and nothing ran",
        "additionalDetails": "start the turn again (turn/start)"}
    raw.send({"id": "stop", "method": "turn/interrupt", "params": {"threadId": thread,
                                                                    "turnId": lost}})
    assert raw.until("id", "stop")["error"]["message"] == \
        f"no active turn {lost} on thread {thread}"  # it has ended: nothing to stop
    second, seen = turn(raw, thread, "say it again")
    assert [m["params"]["turn"]["status"] for m in seen
            if m.get("method") == "turn/completed"] == ["completed"]
    assert [(t["id"], t["status"]) for t in read(raw, thread)["turns"]] == [
        (lost, "interrupted"), (second, "completed")]
    assert raw.close() == 0


def test_a_later_server_interrupts_a_turn_its_server_left_waiting(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo one"), reply("ran one")])
    first = Raw(root)
    thread = handshake(first)
    first.send({"id": "go", "method": "turn/start", "params": {
        "threadId": thread, "input": [{"type": "text", "text": "run echo one"}]}})
    turn_id = first.until("id", "go")["result"]["turn"]["id"]
    first.until("method", "item/commandExecution/requestApproval")
    assert first.close() == 0  # gone; the turn waits for its answer in the store

    second = Raw(root)
    handshake(second)
    second.send({"id": "stop", "method": "turn/interrupt", "params": {
        "threadId": thread, "turnId": turn_id}})
    assert second.until("id", "stop") == {"id": "stop", "result": {}}
    ended = second.until("method", "turn/completed")["params"]["turn"]
    assert (ended["id"], ended["status"]) == (turn_id, "interrupted")
    assert [t["status"] for t in read(second, thread)["turns"]] == ["interrupted"]
    assert second.close() == 0
