"""The protocol's hygiene, over a raw pipe: the handshake errors, unknown methods, malformed
and oversized lines, unknown response ids, a client that leaves mid-turn, backpressure."""

from __future__ import annotations

import asyncio
import io
import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from rein.appserver import wire
from rein.store.sqlite import SQLiteStore
from tests.appserver.serve import environment, reply, server_args, shell, workspace

WAIT = 60  # seconds a read waits for the server's next line: a hang fails, never stalls


class Raw:
    """``rein app-server`` on a pipe, one JSON line at a time. Every message the server
    writes is checked against Codex's own schema when the server is closed
    (:meth:`close`: each notification, server request and response, read or not)."""

    wire: list[dict[str, Any]]
    sent: dict[Any, list[str]]  # each request id → the methods sent with it, in order

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(server_args(root), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**__import__("os").environ, **environment(root)},
                                     cwd=root)

    def send(self, message: Any) -> None:
        if isinstance(message, dict) and "method" in message and "id" in message:
            self.__dict__.setdefault("sent", {}).setdefault(message["id"], []).append(
                str(message["method"]))
        raw = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def line(self) -> bytes:
        """The next line the server writes, as written (read on a thread, so that a
        server that stops writing fails the test after a bounded wait)."""
        lines: queue.Queue[bytes] | None = getattr(self, "_lines", None)
        if lines is None:
            lines = self._lines = queue.Queue()
            threading.Thread(target=self._pump, args=(lines,), daemon=True).start()
        try:
            line = lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"the server wrote nothing for {WAIT} s") from None
        assert line, "the server closed its output"
        return line

    def _pump(self, lines: queue.Queue[bytes]) -> None:
        assert self.proc.stdout is not None
        try:
            for line in iter(self.proc.stdout.readline, b""):
                lines.put(line)
        except ValueError:  # closed by close()
            pass
        lines.put(b"")

    def read(self) -> dict[str, Any]:
        message = dict(json.loads(self.line()))
        self.__dict__.setdefault("wire", []).append(message)
        return message

    def off_codex(self) -> list[str]:
        """The messages the server wrote that Codex 0.163.0's schema refuses."""
        from tests.appserver import codex_schema

        wrong: list[str] = []
        sent = {k: list(v) for k, v in self.__dict__.get("sent", {}).items()}
        for message in self.__dict__.get("wire", []):
            if "method" in message:
                wrong += codex_schema.errors(message)
                continue
            asked = sent.get(message.get("id")) or []
            method = asked.pop(0) if asked else None  # requests are answered in order
            if "error" in message:
                continue  # JSON-RPC's shape, checked by each test
            if method is None:
                wrong.append(f"a response to no request: {str(message)[:200]}")
            else:
                wrong += codex_schema.errors(message, answering=method)
        return wrong

    def until(self, key: str, value: Any) -> dict[str, Any]:
        while True:
            message = self.read()
            if message.get(key) == value:
                return message

    def close(self) -> int:
        """Close stdin, wait for the server's exit code; AssertionError when a message it
        wrote is not valid by Codex's schema."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=120)
        # What was written and never read is checked too: the pump ends with b"" once the
        # server's output is closed (a server never read from is read here).
        lines: queue.Queue[bytes] | None = getattr(self, "_lines", None)
        rest: list[bytes] = []
        if lines is None and self.proc.stdout is not None:
            rest = self.proc.stdout.read().splitlines()
        while lines is not None:
            try:
                line = lines.get(timeout=WAIT)
            except queue.Empty:  # its b"" was read already
                break
            if not line:
                break
            rest.append(line)
        self.__dict__.setdefault("wire", []).extend(dict(json.loads(x)) for x in rest if x)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        wrong = self.off_codex()
        assert wrong == [], f"messages Codex's schema refuses: {wrong}"
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
    raw.send({"id": 3, "method": "fs/readFile", "params": {}})
    assert raw.read() == {"id": 3, "error": {
        "code": -32601, "message": "method not implemented by rein app-server: fs/readFile",
        "data": {"code": "THREAD009",
                 "hint": "docs/app-server.md lists the methods rein answers"}}}
    raw.send(b"{not json\n")
    assert raw.read()["error"]["code"] == -32700
    raw.send(b"[1, 2]\n")
    assert raw.read() == {"id": None, "error": {
        "code": -32600, "message": "Invalid request: batches are not supported; send one "
                                   "message per line"}}
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


# Lines JSON-RPC 2.0 answers with an error, each followed by a request that must be answered:
# (the line, the answer). An id the server cannot echo as JSON is answered with id null.
DEEP = b"[" * 1000
BAD_LINES: list[tuple[bytes, dict[str, Any]]] = [
    (DEEP + b"\n", {"id": None, "error": {
        "code": -32700, "message": "Parse error: nested deeper than 100 levels"}}),
    (b'{"id": 10, "method": "thread/list", "params": {"a": ' + b"[" * 150 + b"]" * 150 +
     b"}}\n", {"id": 10, "error": {
         "code": -32600, "message": "Invalid request: nested deeper than 100 levels"}}),
    (b'{"id": NaN, "method": "thread/list"}\n', {"id": None, "error": {
        "code": -32700, "message": "Parse error: NaN is not JSON"}}),
    (b'{"id": 1e400, "method": "thread/list"}\n', {"id": None, "error": {
        "code": -32600, "message": "Invalid request: the id 1e400 is a number out of the "
                                   "range rein can hold"}}),
    (b'{"id": 11, "method": "thread/list", "params": {"limit": -Infinity}}\n', {
        "id": None, "error": {"code": -32700, "message": "Parse error: -Infinity is not JSON"}}),
    (b'{"id": 12, "method": "thread/list", "params": {"limit": 1' + b"0" * 5000 + b'}}\n', {
        "id": 12, "error": {"code": -32602, "message": "Invalid params: the number 1" +
                            "0" * 5000 + " is out of the range rein can hold"}}),
    (b'{"id": 13, "method": "thread/list", "params": {"x": "\xff"}}\n', {
        "id": None, "error": {"code": -32700, "message": "Parse error: not UTF-8 (byte 53)"}}),
    (b'{"id": 14, "method": "thread/list", "params": {"x": "\xed\xa0\x80"}}\n', {
        "id": None, "error": {"code": -32700, "message": "Parse error: not UTF-8 (byte 53)"}}),
    (b'{"id": 15, "method": "thread/start", "params": {"cwd": "\\udc00"}}\n', {
        "id": 15, "error": {"code": -32602, "message": "Invalid params: a string holds a lone "
                            "surrogate (U+D800 to U+DFFF alone is not Unicode text)"}}),
    (b'{"id": 16, "method": "thread/list", "params": [1]}\n', {"id": 16, "error": {
        "code": -32602, "message": "Invalid params: params must be an object, not an array"}}),
    (b'{"id": 17, "method": "thread/list", "params": "all"}\n', {"id": 17, "error": {
        "code": -32600, "message": "Invalid request: params must be an object"}}),
    (b'{"id": 18, "method": 5}\n', {"id": 18, "error": {
        "code": -32600, "message": "Invalid request: method must be a string"}}),
    (b'{"id": [1], "method": "thread/list"}\n', {"id": None, "error": {
        "code": -32600, "message": "Invalid request: the id must be a string, a number or "
                                   "null, not an array"}}),
    (b'{"id": true, "method": "thread/list"}\n', {"id": None, "error": {
        "code": -32600, "message": "Invalid request: the id must be a string, a number or "
                                   "null, not true or false"}}),
    (b'[{"id": 19, "method": "thread/list"}]\n', {"id": None, "error": {
        "code": -32600, "message": "Invalid request: batches are not supported; send one "
                                   "message per line"}}),
    (b"[]\n", {"id": None, "error": {"code": -32600,
                                     "message": "Invalid request: not a JSON object"}}),
    (b'"hello"\n', {"id": None, "error": {"code": -32600,
                                          "message": "Invalid request: not a JSON object"}}),
    (b'{"jsonrpc": "2.0"}\n', {"id": None, "error": {
        "code": -32600, "message": "Invalid request: no method and no id"}}),
]


def test_every_bad_line_is_answered_and_the_server_reads_on(raw: Raw) -> None:
    raw.send({"id": 1, "method": "initialize", "params": {"clientInfo": {
        "name": "t", "version": "1"}}})
    assert raw.read()["id"] == 1
    for n, (line, answer) in enumerate(BAD_LINES):
        raw.send(line)
        raw.send({"id": f"after-{n}", "method": "thread/list", "params": {}})
        assert (raw.read(), raw.read()["id"]) == (answer, f"after-{n}"), line[:80]
    # An id holding a lone surrogate is answered, escaped as it came; so is the next one.
    raw.send(b'{"id": "\\ud800", "method": "thread/list", "params": {}}\n')
    assert raw.line() == b'{"id":"\\ud800","result":{"data":[],"nextCursor":null}}\n'
    # Two requests with one id: each is answered, in the order sent.
    raw.send({"id": 7, "method": "thread/start", "params": {}})
    raw.send({"id": 7, "method": "thread/list", "params": {}})
    first, second = raw.until("id", 7), raw.until("id", 7)  # (thread/started between)
    assert (first["id"], "thread" in first["result"]) == (7, True)
    assert (second["id"], [t["id"] for t in second["result"]["data"]]) == (
        7, [first["result"]["thread"]["id"]])
    # Notifications and responses are never answered, malformed or not.
    raw.send(b'{"method": "initialized", "params": [1]}\n')
    raw.send(b'{"id": "apv-none", "result": {"decision": 1e400}}\n')
    raw.send({"id": "last", "method": "thread/list", "params": {}})
    assert raw.read()["id"] == "last"
    assert raw.close() == 0
