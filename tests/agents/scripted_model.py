"""A scripted model server on 127.0.0.1: the test double the real agent CLIs talk to.

It speaks just enough of two wire formats for the Codex CLI (OpenAI Responses,
``POST /v1/responses``, streamed) and Claude Code (Anthropic Messages, ``POST /v1/messages``,
streamed). It is not a model: each answer is a shell command, as a tool call, chosen by a
script from the tool outputs the conversation holds so far, or a final text. A script is a
list (the n-th command answers a conversation holding n tool results; past its end, the
final text) or a *policy*: a callable given the outputs so far, returning the next command
or ``None`` for the final text, so that it can read what ``rein next`` printed.

Every request is kept (path, headers, body) and every answer carries recognisable usage
numbers (``USAGE``, plus the step), so a test can trace them into the agent's own logs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class ToolCall:
    """A call of another of the agent's tools than its shell (Claude Code's ``Write``,
    ``Read``...), with the input it takes."""

    name: str
    input: dict[str, Any]


Answer = str | ToolCall  # a shell command, or another tool call
Step = Answer | Callable[[list[str]], Answer]
Policy = Callable[[list[str]], "Answer | None"]

# Per answer: input, cached input, cache creation, output, reasoning. Each answer adds its
# step number to input and output, so that every model call is told apart in a log.
USAGE = {"input": 1000, "cached": 300, "cache_write": 40, "output": 200, "reasoning": 20}


@dataclass
class Exchange:
    """One request the server answered, and what it answered."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    answer: str  # the command of a tool call, or the final text
    step: int
    usage: dict[str, int] = field(default_factory=dict)
    message: str = ""  # the id the answer carries (what the agent's record keeps of it)


class ScriptedModel:
    """A thread serving the script on an ephemeral port of 127.0.0.1 (a test double)."""

    def __init__(self, script: Sequence[Step] | Policy, final: str = "Finished.") -> None:
        self.script: list[Step] | Policy = script if callable(script) else list(script)
        self.final = final
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, outputs: list[str]) -> tuple[Answer | None, str, int]:
        """``(call, text, step)``: the next tool call, a shell command or a
        :class:`ToolCall` (``None``: the final text), for a conversation holding
        ``outputs`` as its tool results."""
        step = len(outputs)
        if callable(self.script):
            command = self.script(outputs)
            return (None, self.final, step) if command is None else (command, "", step)
        if step >= len(self.script):
            return None, self.final, step
        entry = self.script[step]
        return (entry(outputs) if callable(entry) else entry), "", step

    def usage(self, step: int) -> dict[str, int]:
        return {"input": USAGE["input"] + step, "cached": USAGE["cached"],
                "cache_write": USAGE["cache_write"], "output": USAGE["output"] + step,
                "reasoning": USAGE["reasoning"]}

    def record(self, exchange: Exchange, prefix: str) -> str:
        """Keep ``exchange``, and give its answer an id: ``prefix``, its step, its number."""
        with self._lock:
            self.exchanges.append(exchange)
            exchange.message = f"{prefix}_{exchange.step}_{len(self.exchanges)}"
            return exchange.message


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:  # Claude Code checks the base URL first
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._json(404, {"error": {"message": "not served by the scripted model"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, {"error": {"message": "not JSON"}})
                return
            path = self.path.split("?", 1)[0]
            headers = {k.lower(): v for k, v in self.headers.items()}
            if path.endswith("/responses"):
                self._responses(path, headers, body)
            elif path.endswith("/messages/count_tokens"):
                self._json(200, {"input_tokens": USAGE["input"]})
            elif path.endswith("/messages"):
                self._messages(path, headers, body)
            else:
                self._json(404, {"error": {"message": f"no endpoint {path}"}})

        # -- OpenAI Responses (the Codex CLI) ------------------------------------------

        def _responses(self, path: str, headers: dict[str, str], body: dict[str, Any]
                       ) -> None:
            items = [i for i in body.get("input") or [] if isinstance(i, dict)]
            outputs = [_text(i.get("output")) for i in items
                       if i.get("type") == "function_call_output"]
            command, text, step = model.answer(outputs)
            assert not isinstance(command, ToolCall), "the Codex CLI is given shell commands"
            usage = model.usage(step)
            rid = model.record(Exchange(path, headers, body, command or text, step, usage),
                               "resp")
            events: list[tuple[str, dict[str, Any]]] = [
                ("response.created", {"type": "response.created",
                                      "response": {"id": rid, "status": "in_progress"}})]
            if command is not None:
                call = {"type": "function_call", "id": f"fc_{rid}", "call_id": f"call_{rid}",
                        "name": "exec_command", "arguments": json.dumps({"cmd": command, "yield_time_ms": 120000}),
                        "status": "completed"}
                events.append(("response.output_item.added",
                               {"type": "response.output_item.added", "output_index": 0,
                                "item": call}))
                events.append(("response.output_item.done",
                               {"type": "response.output_item.done", "output_index": 0,
                                "item": call}))
            else:
                message = {"type": "message", "role": "assistant", "id": f"msg_{rid}",
                           "status": "completed",
                           "content": [{"type": "output_text", "text": text,
                                        "annotations": []}]}
                events.append(("response.output_item.added",
                               {"type": "response.output_item.added", "output_index": 0,
                                "item": {**message, "content": [],
                                         "status": "in_progress"}}))
                events.append(("response.output_item.done",
                               {"type": "response.output_item.done", "output_index": 0,
                                "item": message}))
            events.append(("response.completed", {"type": "response.completed", "response": {
                "id": rid, "status": "completed", "usage": {
                    "input_tokens": usage["input"],
                    "input_tokens_details": {"cached_tokens": usage["cached"]},
                    "output_tokens": usage["output"],
                    "output_tokens_details": {"reasoning_tokens": usage["reasoning"]},
                    "total_tokens": usage["input"] + usage["output"]}}}))
            self._stream("".join(f"event: {name}\ndata: {json.dumps(data)}\n\n"
                                 for name, data in events))

        # -- Anthropic Messages (Claude Code) ------------------------------------------

        def _messages(self, path: str, headers: dict[str, str], body: dict[str, Any]
                      ) -> None:
            if not body.get("tools"):  # a side request (a title, a summary): plain text
                self._anthropic(path, headers, body, None, "rein session", -1)
                return
            outputs = [_text(block.get("content"))
                       for message in body.get("messages") or []
                       if isinstance(message, dict) and isinstance(message.get("content"), list)
                       for block in message["content"]
                       if isinstance(block, dict) and block.get("type") == "tool_result"]
            command, text, step = model.answer(outputs)
            self._anthropic(path, headers, body, command, text, step)

        def _anthropic(self, path: str, headers: dict[str, str], body: dict[str, Any],
                       command: Answer | None, text: str, step: int) -> None:
            usage = model.usage(max(step, 0))
            mid = model.record(Exchange(path, headers, body, str(command or text), step, usage),
                               "msg") if step >= 0 else f"msg_0_{len(model.exchanges)}"
            start_usage = {"input_tokens": usage["input"],
                           "cache_creation_input_tokens": usage["cache_write"],
                           "cache_read_input_tokens": usage["cached"], "output_tokens": 1}
            events: list[tuple[str, dict[str, Any]]] = [("message_start", {
                "type": "message_start", "message": {
                    "id": mid, "type": "message", "role": "assistant",
                    "model": body.get("model") or "scripted", "content": [],
                    "stop_reason": None, "stop_sequence": None, "usage": start_usage}})]
            if command is not None:
                call = command if isinstance(command, ToolCall) else \
                    ToolCall("Bash", {"command": command})
                events += [
                    ("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "tool_use",
                                                               "id": f"toolu_{mid}",
                                                               "name": call.name, "input": {}}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "input_json_delta",
                                                       "partial_json": json.dumps(call.input)}})]
                stop = "tool_use"
            else:
                events += [
                    ("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}}),
                    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": text}})]
                stop = "end_turn"
            events += [
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": usage["output"]}}),
                ("message_stop", {"type": "message_stop"})]
            self._stream("".join(f"event: {name}\ndata: {json.dumps(data)}\n\n"
                                 for name, data in events))

        # -- replies ---------------------------------------------------------------------

        def _stream(self, text: str) -> None:
            data = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _text(content: Any) -> str:
    """A tool result's text, whether a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(part.get("text") if isinstance(part, dict) else part)
                       for part in content)
    return "" if content is None else str(content)
