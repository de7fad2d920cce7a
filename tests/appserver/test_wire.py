"""The protocol's hygiene, over a raw pipe: the handshake errors, unknown methods, malformed
and oversized lines, unknown response ids, a client that leaves mid-turn, backpressure."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rein.appserver import wire
from rein.store.sqlite import SQLiteStore
from tests.appserver.serve import environment, reply, server_args, shell, workspace


class Raw:
    """``rein app-server`` on a pipe, one JSON line at a time."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(server_args(root), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**__import__("os").environ, **environment(root)},
                                     cwd=root)

    def send(self, message: Any) -> None:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        return dict(json.loads(line))

    def until(self, key: str, value: Any) -> dict[str, Any]:
        while True:
            message = self.read()
            if message.get(key) == value:
                return message

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=120)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code


@pytest.fixture(name="raw")
def raw_fixture(tmp_path: Path) -> Any:
    server = Raw(workspace(tmp_path, [shell("echo one"), reply("ran one")]))
    yield server
    if server.proc.poll() is None:
        server.proc.kill()
        server.proc.wait()


def test_handshake_errors_unknown_methods_and_bad_lines(raw: Raw) -> None:
    raw.send({"id": 1, "method": "thread/list", "params": {}})
    assert raw.read() == {"id": 1, "error": {"code": -32600, "message": "Not initialized"}}
    raw.send({"id": "a", "method": "initialize", "params": {"clientInfo": {
        "name": "t", "version": "1"}, "capabilities": {"optOutNotificationMethods": [
            "thread/started"]}}})
    init = raw.read()
    assert init["id"] == "a" and init["result"]["userAgent"].startswith("rein/")
    assert {"codexHome", "platformFamily", "platformOs"} <= set(init["result"])
    raw.send({"method": "initialized"})
    raw.send({"id": 2, "method": "initialize", "params": {}})
    assert raw.read()["error"]["message"] == "Already initialized"
    raw.send({"id": 3, "method": "review/start", "params": {}})
    assert raw.read() == {"id": 3, "error": {
        "code": -32601, "message": "method not implemented by rein app-server: review/start"}}
    raw.send(b"{not json\n")
    assert raw.read()["error"]["code"] == -32700
    raw.send(b"[1, 2]\n")
    assert raw.read() == {"id": None, "error": {
        "code": -32600, "message": "Invalid request: not a JSON object"}}
    raw.send(b'{"id": 4, "method": "thread/list", "params": {"x": "' +
             b"y" * (wire.MAX_LINE + 10) + b'"}}\n')
    assert raw.read()["error"]["message"] == f"message larger than {wire.MAX_LINE} bytes"
    raw.send({"id": "no-such-request", "result": {"decision": "accept"}})  # ignored
    raw.send({"id": 5, "method": "thread/read", "params": {"threadId": "thr-nope"}})
    missing = raw.read()
    assert missing["id"] == 5 and missing["error"]["data"]["code"] == "THREAD404"
    raw.send({"id": 6, "method": "thread/start", "params": {"sandbox": "sideways"}})
    assert raw.read()["error"]["data"]["code"] == "THREAD002"
    raw.send({"id": 7, "method": "thread/start", "params": {}})
    started = raw.read()
    assert started["id"] == 7 and started["result"]["sandbox"]["type"] == "workspaceWrite"
    raw.send({"id": 8, "method": "thread/list", "params": {}})
    # thread/started was opted out of: the next message is the list's answer
    assert [t["id"] for t in raw.read()["result"]["data"]] == [
        started["result"]["thread"]["id"]]
    assert raw.close() == 0


def test_a_client_that_leaves_mid_turn_loses_nothing(raw: Raw, tmp_path: Path) -> None:
    raw.send({"id": 1, "method": "initialize", "params": {"clientInfo": {
        "name": "t", "version": "1"}}})
    raw.read()
    raw.send({"id": 2, "method": "thread/start", "params": {}})
    thread = raw.until("id", 2)["result"]["thread"]["id"]
    raw.send({"id": 3, "method": "turn/start", "params": {
        "threadId": thread, "input": [{"type": "text", "text": "run echo one"}]}})
    asked = raw.until("method", "item/commandExecution/requestApproval")
    assert raw.close() == 0  # gone without answering: the server stops cleanly
    store = SQLiteStore.open(tmp_path, create=False)
    assert store is not None
    try:
        [turn] = store.thread_turns(thread)
        assert turn.run_id is not None
        run = store.get_run(turn.run_id)
        assert run is not None and run.status.value == "awaiting_human"
        approval = store.get_approval(asked["id"])
        assert approval is not None and approval.status.value == "pending"
    finally:
        store.close()


def test_a_full_queue_answers_overloaded_and_keeps_the_rest() -> None:
    lines = b"".join(json.dumps({"id": i, "method": "thread/list"}).encode() + b"\n"
                     for i in range(3))
    out = io.BytesIO()

    async def read_all() -> list[Any]:
        transport = wire.Wire(io.BytesIO(lines), out)
        transport.queue = asyncio.Queue(1)  # nothing consumes it while the reader runs
        reader = transport.start_reading(asyncio.get_running_loop())
        await asyncio.to_thread(reader.join)
        taken = [await transport.queue.get(), await transport.queue.get()]
        return [t.id if t is not None else None for t in taken]

    assert asyncio.run(read_all()) == [0, None]
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert answers == [{"id": i, "error": {"code": -32001,
                                           "message": "Server overloaded; retry later."}}
                       for i in (1, 2)]
