"""``rein acp`` over a raw pipe: every line it can read that is not a well-formed JSON-RPC
message is answered with the error JSON-RPC 2.0 names, and the agent reads on."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from tests.acp_agent.client import agent_args
from tests.appserver.serve import environment, workspace

BAD_LINES: list[tuple[bytes, dict[str, Any]]] = [
    (b"[]\n", {"id": None, "error": {"code": -32600,
                                     "message": "Invalid request: not a JSON object"}}),
    (b"{not json\n", {"id": None, "error": {"code": -32700, "message": (
        "Parse error: Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1)")}}),
    (b"[" * 1000 + b"\n", {"id": None, "error": {
        "code": -32700, "message": "Parse error: nested deeper than 100 levels"}}),
    (b'{"jsonrpc": "2.0", "id": NaN, "method": "session/list", "params": {}}\n', {
        "id": None, "error": {"code": -32700, "message": "Parse error: NaN is not JSON"}}),
    (b'{"jsonrpc": "2.0", "id": 1e400, "method": "session/list", "params": {}}\n', {
        "id": None, "error": {"code": -32600, "message": "Invalid request: the id 1e400 is a "
                              "number out of the range rein can hold"}}),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "session/list", "params": {"cursor": "\xff"}}\n',
     {"id": None, "error": {"code": -32700, "message": "Parse error: not UTF-8 (byte 76)"}}),
    (b'{"jsonrpc": "2.0", "id": 6, "method": "session/list", "params": [1]}\n', {
        "id": 6, "error": {"code": -32602,
                           "message": "Invalid params: params must be an object, not an array"}}),
    (b'{"jsonrpc": "2.0", "id": 7, "method": 7}\n', {"id": 7, "error": {
        "code": -32600, "message": "Invalid request: method must be a string"}}),
    (b'[{"jsonrpc": "2.0", "id": 8, "method": "session/list", "params": {}}]\n', {
        "id": None, "error": {"code": -32600, "message": "Invalid request: batches are not "
                              "supported; send one message per line"}}),
    (b'{"jsonrpc": "2.0", "id": [9], "result": {}}\n', {"id": None, "error": {
        "code": -32600, "message": "Invalid request: the id must be a string, a number or "
                                   "null, not an array"}}),
]


def test_every_bad_line_is_answered_and_the_agent_reads_on(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    proc = subprocess.Popen((sys.executable, *agent_args(root)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, **environment(root)}, cwd=root)
    assert proc.stdin is not None and proc.stdout is not None

    def send(line: bytes | dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line if isinstance(line, bytes) else
                         json.dumps({"jsonrpc": "2.0", **line}).encode() + b"\n")
        proc.stdin.flush()

    def read() -> dict[str, Any]:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, "the agent closed its output"
        message = dict(json.loads(line))
        assert message.pop("jsonrpc") == "2.0"
        return message

    try:
        send({"id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
        assert read()["result"]["protocolVersion"] == 1
        for n, (line, answer) in enumerate(BAD_LINES):
            send(line)
            send({"id": f"after-{n}", "method": "session/list", "params": {}})
            assert (read(), read()["id"]) == (answer, f"after-{n}"), line[:80]
        send({"id": "new", "method": "session/new", "params": {"cwd": str(root),
                                                                "mcpServers": []}})
        assert uuid.UUID(read()["result"]["sessionId"]).version == 7
    finally:
        proc.stdin.close()
        code = proc.wait(timeout=120)
        proc.stdout.close()
    assert code == 0


def test_a_line_over_the_limit_is_dropped_whole_and_answered() -> None:
    """The limit is the SDK's 50 MiB on stdio; here a reader with a small one, in process."""
    from rein.acp.transport import LineTransport

    class Written:
        def __init__(self) -> None:
            self.data = b""

        def write(self, data: bytes) -> None:
            self.data += data

        async def drain(self) -> None:
            return None

    async def main() -> tuple[list[Any], bytes]:
        reader = asyncio.StreamReader(limit=64)
        reader.feed_data(b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": "' +
                         b"y" * 500 + b'"}}\n{"jsonrpc": "2.0", "id": 2, "method": "x"}\n' +
                         b"z" * 300)  # the last line, over the limit, ends the input
        reader.feed_eof()
        written = Written()
        transport = LineTransport(reader, written, limit=64)  # type: ignore[arg-type]
        got = [await transport.receive(), await transport.receive()]
        return got, written.data

    got, data = asyncio.run(main())
    assert got == [{"jsonrpc": "2.0", "id": 2, "method": "x"}, None]
    answer = {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "message larger than 64 bytes"}}
    assert [json.loads(line) for line in data.splitlines()] == [answer, answer]
