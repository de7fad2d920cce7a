"""``rein acp``'s stdio: JSON-RPC 2.0 lines read strictly, for the ACP SDK's connection.

The SDK's own stdio transport logs a line that is not JSON and answers nothing, echoes an id
``NaN`` as ``NaN``, and stops the agent on a line that is JSON but not an object (``[]``).
This transport hands the SDK's connection (given to :func:`acp.run_agent` in place of the
streams) only well-formed messages: every other line it can read is answered here with the
error JSON-RPC 2.0 names (:mod:`rein.appserver.lines`, the app-server's reader), and the
agent reads on. A line longer than :data:`MAX_LINE` bytes is dropped whole and answered.

A request for a method the SDK's router does not know yet (``session/delete``, stable in the
ACP schema) is answered here by its handler (:data:`Local`), the way the SDK answers one.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import acp
from acp import schema
from pydantic import BaseModel, ValidationError

from rein.appserver import lines

# Bytes of one message, as the SDK allows (an editor's buffer comes back whole in a
# fs/read_text_file answer); a longer line is dropped, never buffered.
MAX_LINE = 50 * 1024 * 1024

# A request's handler: its params in, its result (a model, or JSON) out.
Local = Callable[[Any], Awaitable[Any]]


class LineTransport:
    """The SDK's message-level transport (``send``, ``receive``, ``close``) over stdio."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 limit: int = MAX_LINE, local: Mapping[str, Local] | None = None) -> None:
        self._reader, self._writer = reader, writer  # (``reader``'s own limit is ``limit``)
        self._limit = limit
        self._lock = asyncio.Lock()
        self._local = dict(local or {})
        self._answering: set[asyncio.Future[None]] = set()

    async def send(self, message: Mapping[str, Any]) -> None:
        try:
            line = lines.encode(message)
        except ValueError as exc:  # a number JSON cannot say: an error in its place
            print(f"rein acp: a message JSON cannot carry: {exc}", file=sys.stderr)
            if "id" not in message or "method" in message:
                return
            line = lines.encode({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": lines.INTERNAL_ERROR,
                "message": "internal error: a result JSON cannot carry"}})
        async with self._lock:
            self._writer.write(line)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message; None at the end of input."""
        while True:
            line = await self._line()
            if line is None:
                return None
            if line is _TOO_LONG:
                await self._refuse(lines.Refusal(
                    None, lines.INVALID_REQUEST, f"message larger than {self._limit} bytes"))
                continue
            try:
                parsed = lines.parse(line)
            except Exception as exc:  # noqa: BLE001 - one bad line never stops the agent
                print(f"rein acp: a line: {type(exc).__name__}: {exc}", file=sys.stderr)
                await self._refuse(lines.Refusal(None, lines.INTERNAL_ERROR,
                                                 "internal error reading a line"))
                continue
            if isinstance(parsed, lines.Refusal):
                await self._refuse(parsed)
            elif parsed is not None:
                handler = self._local.get(str(parsed.get("method"))) \
                    if "id" in parsed else None
                if handler is None:
                    return parsed
                answering = asyncio.ensure_future(self._answer(parsed, handler))
                self._answering.add(answering)
                answering.add_done_callback(self._answering.discard)

    async def _answer(self, request: dict[str, Any], handler: Local) -> None:
        """One request answered by its local handler: its result, or its error."""
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        try:
            result = await handler(request.get("params"))
            reply["result"] = result.model_dump(mode="json", by_alias=True, exclude_none=True) \
                if isinstance(result, BaseModel) else result
        except acp.RequestError as exc:
            reply["error"] = exc.to_error_obj()
        except ValidationError as exc:
            reply["error"] = acp.RequestError.invalid_params(
                {"errors": exc.errors(include_url=False, include_context=False)}).to_error_obj()
        try:
            await self.send(reply)
        except (ConnectionError, OSError):  # the client has gone: nothing to answer
            pass

    async def close(self) -> None:
        # stdout stays open: the process writes its exit through it (as the SDK's does)
        async with self._lock:
            try:
                await self._writer.drain()
            except (ConnectionError, OSError):
                pass

    async def _refuse(self, refusal: lines.Refusal) -> None:
        try:
            await self.send({"jsonrpc": "2.0", **refusal.to_json()})
        except (ConnectionError, OSError):  # the client has gone: nothing to answer
            pass

    async def _line(self) -> bytes | None:
        """One line (the last may lack its newline), :data:`_TOO_LONG`, or None at the end."""
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError as exc:
            await self._reader.readexactly(exc.consumed)
        while True:  # drop the rest of the line, a limit's worth at a time
            try:
                await self._reader.readuntil(b"\n")
                return _TOO_LONG
            except asyncio.IncompleteReadError:
                return _TOO_LONG
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)


_TOO_LONG = b"\x00too long"  # a marker, compared by identity


async def serve_stdio(agent: Any) -> None:
    """Run the SDK's agent-side connection for ``agent`` on this process's stdio."""
    async def delete(params: Any) -> Any:
        request = schema.DeleteSessionRequest.model_validate(params)
        return await agent.delete_session(session_id=request.session_id)

    reader, writer = await acp.stdio_streams(limit=MAX_LINE)
    # session/resume and session/close are stable in the ACP schema; the SDK routes them
    # only with its unstable flag (which adds session/fork: rein answers method not found).
    await acp.run_agent(agent, LineTransport(reader, writer,
                                             local={"session/delete": delete}),
                        use_unstable_protocol=True)
