"""JSON lines over stdio, the way Codex's app-server frames JSON-RPC.

One JSON object per line, without the ``"jsonrpc"`` member (the official client neither
sends nor needs it). A line longer than :data:`MAX_LINE` bytes is dropped whole and
answered with an error; every other line is read strictly (:mod:`rein.appserver.lines`):
one that is not JSON, not a JSON-RPC message or not params rein can take is answered with
the error JSON-RPC 2.0 names, and the server reads on. Reading happens on a thread of its
own, so that a turn running on the event loop never stops the server from hearing an
answer; when the queue of unread messages is full the reader itself answers ``-32001`` (the
client retries), the way Codex sheds load.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Mapping
from typing import IO, Any

from rein.appserver import lines
from rein.appserver.lines import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
)
from rein.core.frozen import Frozen

MAX_LINE = 4 * 1024 * 1024  # bytes of one message; a longer line is refused, not buffered
QUEUE = 256  # messages read and not yet handled before the server answers -32001
OVERLOADED = -32001

__all__ = ["INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST", "MAX_LINE",
           "METHOD_NOT_FOUND", "OVERLOADED", "PARSE_ERROR", "QUEUE", "Incoming",
           "MethodError", "Wire"]


class MethodError(Exception):
    """A request answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class Incoming(Frozen, kw_only=False):
    """One message read: a request (``id`` and ``method``), a notification (``method``
    only) or a response to a server request (``id`` with ``result`` or ``error``)."""

    message: Mapping[str, Any]

    @property
    def id(self) -> Any:
        return self.message.get("id")

    @property
    def method(self) -> str | None:
        method = self.message.get("method")
        return method if isinstance(method, str) else None

    @property
    def params(self) -> Mapping[str, Any]:
        params = self.message.get("params")
        return params if isinstance(params, Mapping) else {}


class Wire:
    """The two ends of the connection: a queue of incoming messages and a locked writer."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader, self._writer = reader, writer
        self._lock = threading.Lock()
        self.queue: asyncio.Queue[Incoming | None] = asyncio.Queue(QUEUE)
        self.closed = False

    def send(self, message: Mapping[str, Any]) -> None:
        """Write one message (from any thread); a vanished client is not an error."""
        try:
            line = lines.encode(message)
        except ValueError as exc:  # a number JSON cannot say: never written as not-JSON
            print(f"rein app-server: a message JSON cannot carry: {exc}", file=sys.stderr)
            if "id" not in message or "method" in message:
                return
            line = lines.encode({"id": message["id"], "error": {
                "code": INTERNAL_ERROR, "message": "internal error: a result JSON cannot "
                                                   "carry"}})
        with self._lock:
            if self.closed:
                return
            try:
                self._writer.write(line)
                self._writer.flush()
            except (BrokenPipeError, OSError, ValueError):
                self.closed = True  # the client went away; turns go on, recorded

    def error(self, request_id: Any, code: int, message: str,
              data: Mapping[str, Any] | None = None) -> None:
        body: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            body["data"] = dict(data)
        self.send({"id": request_id, "error": body})

    def start_reading(self, loop: asyncio.AbstractEventLoop) -> threading.Thread:
        thread = threading.Thread(target=self._read, args=(loop,), daemon=True,
                                  name="app-server-stdin")
        thread.start()
        return thread

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            while self._read_one(loop):
                pass
        finally:  # however reading stops, the server hears that it did
            try:
                loop.call_soon_threadsafe(self._put_end)
            except RuntimeError:  # the loop has closed: the server is stopping
                pass

    def _read_one(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Read and hand on one line; False at the end of input."""
        try:
            line = self._reader.readline(MAX_LINE + 1)
        except (OSError, ValueError):
            return False
        if not line:
            return False
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            self._skip_rest()
            self.error(None, INVALID_REQUEST, f"message larger than {MAX_LINE} bytes")
            return True
        try:
            parsed = lines.parse(line)
        except Exception as exc:  # noqa: BLE001 - one bad line never stops the server
            print(f"rein app-server: a line: {type(exc).__name__}: {exc}", file=sys.stderr)
            self.error(None, INTERNAL_ERROR, "internal error reading a line")
            return True
        if isinstance(parsed, lines.Refusal):
            self.send(parsed.to_json())
        elif parsed is not None:
            incoming = Incoming(parsed)
            shed = not self._offer(loop, incoming)
            if shed and incoming.method is not None and incoming.id is not None:
                self.error(incoming.id, OVERLOADED, "Server overloaded; retry later.")
        return True

    def _put_end(self) -> None:
        # The end of input must arrive even when the queue is full: it waits behind the rest.
        try:
            self.queue.put_nowait(None)
        except asyncio.QueueFull:
            asyncio.get_running_loop().create_task(self.queue.put(None))

    def _skip_rest(self) -> None:
        while True:
            rest = self._reader.readline(MAX_LINE)
            if not rest or rest.endswith(b"\n"):
                return

    def _offer(self, loop: asyncio.AbstractEventLoop, incoming: Incoming) -> bool:
        """Queue ``incoming`` on the loop; False when the queue is full. Responses to the
        server's own questions are never shed: a turn waits on them."""
        done = threading.Event()
        taken: list[bool] = []

        def put() -> None:
            try:
                self.queue.put_nowait(incoming)
                taken.append(True)
            except asyncio.QueueFull:
                if incoming.method is None:  # an answer: wait for room instead
                    loop.create_task(self.queue.put(incoming))
                    taken.append(True)
            done.set()

        try:
            loop.call_soon_threadsafe(put)
        except RuntimeError:  # the loop has closed: the server is stopping
            return True
        done.wait()
        return bool(taken)
