"""Turns on different threads of one ``rein app-server`` overlap: while each waits on its
model, the others run (benchmarks/appserver_threads.py times it). Counted, not timed: the
scripted provider (a test double) is held at an event until every turn's model call is in
flight at once, so turns that ran one after another would never all be in flight."""

from __future__ import annotations

import asyncio
import json
import queue
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rein
from rein.appserver.server import serve
from rein.providers.scripted import ScriptedProvider
from tests.appserver.serve import reply, workspace
from tests.scenarios.model_env import isolate

THREADS = 10
LOOKS = 60  # seconds in all the test waits for every call to be in flight (a bound only)


class Reader:
    """The server's stdin: lines the test puts, read by the server's reading thread."""

    def __init__(self) -> None:
        self.lines: queue.Queue[bytes] = queue.Queue()

    def readline(self, limit: int = -1) -> bytes:
        return self.lines.get()

    def send(self, message: dict[str, Any]) -> None:
        self.lines.put(json.dumps(message).encode() + b"\n")


class Writer:
    """The server's stdout: each message it writes, handed to the test on the loop."""

    def __init__(self) -> None:
        self.messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def write(self, line: bytes) -> int:
        self.messages.put_nowait(json.loads(line))
        return len(line)

    def flush(self) -> None:
        return None


class Held:
    """Model calls held at an event until ``expected`` are in flight together."""

    def __init__(self, expected: int) -> None:
        self.expected, self.in_flight, self.most = expected, 0, 0
        self.all_in = asyncio.Event()

    async def call(self) -> None:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight == self.expected:
            self.all_in.set()
        try:
            await self.all_in.wait()
        finally:
            self.in_flight -= 1


@pytest.fixture(name="held")
def held_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[Held]:
    held = Held(THREADS)
    complete = ScriptedProvider.complete

    async def holding(self: ScriptedProvider, request: Any) -> Any:
        await held.call()
        return await complete(self, request)

    monkeypatch.setattr(ScriptedProvider, "complete", holding)
    yield held


def test_turns_on_ten_threads_are_in_flight_at_once(tmp_path: Path, held: Held,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)
    workspace(tmp_path, [reply("done")], position="conversation")

    async def scenario() -> tuple[list[str], bool]:
        reader, writer = Reader(), Writer()
        harness = rein.Harness.open(tmp_path)
        server = asyncio.ensure_future(serve(harness, reader, writer))  # type: ignore[arg-type]

        async def answer(request_id: int) -> dict[str, Any]:
            while (message := await writer.messages.get()).get("id") != request_id:
                pass
            return dict(message["result"])

        reader.send({"id": 0, "method": "initialize", "params": {"clientInfo": {
            "name": "test", "version": "1"}}})
        await answer(0)
        reader.send({"method": "initialized"})
        threads = []
        for n in range(1, THREADS + 1):
            reader.send({"id": n, "method": "thread/start", "params": {}})
            threads.append((await answer(n))["thread"]["id"])
        for n, thread in enumerate(threads, start=THREADS + 1):
            reader.send({"id": n, "method": "turn/start", "params": {
                "threadId": thread, "input": [{"type": "text", "text": "hello"}]}})
        try:  # a bound on the wait, not a measure: the count is what is checked
            await asyncio.wait_for(held.all_in.wait(), LOOKS)
            overlapped = True
        except TimeoutError:
            overlapped = False
            held.all_in.set()  # let whichever turns are held finish
        statuses = []
        while len(statuses) < THREADS:
            message = await writer.messages.get()
            if message.get("method") == "turn/completed":
                statuses.append(message["params"]["turn"]["status"])
        reader.lines.put(b"")  # the client closes its end
        await server
        harness.close()
        return statuses, overlapped

    statuses, overlapped = asyncio.run(scenario())
    assert statuses == ["completed"] * THREADS
    assert held.most == THREADS
    assert overlapped
