"""The scripted provider: a **test double** that answers from a script, never a default.

It lets the model worker, the engine and the protocol surfaces run whole attempts (text, tool
calls, usage) with no network and no model. Each call consumes the next turn of the script::

    turns = [
        {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "hi"}}],
         "usage": {"input": 120, "output": 30}},
        {"tool_calls": [{"name": "submit_outputs", "arguments": {"summary": "done"}}]},
    ]
    provider = ScriptedProvider(turns)

A turn may also be a callable ``(ModelRequest) -> dict`` that looks at the conversation so far
(for example to answer with what the last tool result said); a turn's ``reasoning`` is given
as the response's reasoning summary, and its ``delay_seconds`` makes the call wait that
long before it answers (a slow model, for benchmarks of what overlaps). ``requests`` keeps every request
received, so tests can assert what the model was shown. From rein.toml, ``kind = "scripted"``
with ``options.script = "path/to/turns.json"`` (or ``.yaml``) loads the turns from a file;
``options.position = "conversation"`` picks the turn by the number of assistant turns already
in the request instead of by call count, so one script is one conversation, even across a
pause and a resume in another process.
When the script runs out the provider raises :class:`ProviderResponseError` (PRV005) rather
than inventing an answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.errors import ConfigError
from rein.providers.config import ProviderConfig
from rein.providers.errors import ProviderResponseError
from rein.providers.types import (
    Capabilities,
    Completed,
    Message,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    StreamEvent,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
)

Turn = Mapping[str, Any] | Callable[[ModelRequest], Mapping[str, Any]]


class ScriptedProvider:
    """Answers each request with the next scripted turn (a test double)."""

    capabilities = Capabilities(
        streaming=True, tool_calling=True, parallel_tool_calls=True, seed=True
    )

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        name: str = "scripted",
        model: str = "scripted",
        config: ProviderConfig | None = None,
        by_conversation: bool = False,
    ) -> None:
        self.name = name
        self.model = model
        self.config = config
        # Position by the conversation (the number of assistant turns in the request), not
        # by call count: a conversation resumed in another process gets the right turn.
        self.by_conversation = by_conversation
        self._turns = list(turns)
        self._next = 0
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_config(cls, config: ProviderConfig, http_client: Any = None) -> ScriptedProvider:
        script = config.options.get("script")
        if not isinstance(script, str):
            raise ConfigError(
                f"providers.{config.name}: a scripted provider needs options.script",
                code="PROVCFG004",
                hint='write options = { script = "turns.json" } '
                "(a list of turns, see docs/providers.md)",
            )
        from rein.formats.loader import load_path

        data = load_path(Path(script)).data
        if not isinstance(data, list):
            raise ConfigError(f"{script}: a script is a list of turns", code="PROVCFG004")
        by_conversation = config.options.get("position", "calls") == "conversation"
        return cls(data, name=config.name, model=config.model or "scripted", config=config,
                   by_conversation=by_conversation)

    @property
    def remaining(self) -> int:
        """Turns not yet used."""
        return len(self._turns) - self._next

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.by_conversation:
            self._next = sum(1 for m in request.messages if m.role == "assistant")
        if self._next >= len(self._turns):
            raise ProviderResponseError(
                f"{self.name}: the script has no turn {self._next + 1} (it has {len(self._turns)})",
                hint="add turns to the script, or lower max_agent_steps",
                provider=self.name,
            )
        turn = self._turns[self._next]
        self._next += 1
        data = turn(request) if callable(turn) else turn
        delay = float(data.get("delay_seconds") or 0)
        if delay:  # a model that takes its time: what overlaps when turns run at once
            await asyncio.sleep(delay)
        return self._response(data, request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        response = await self.complete(request)
        if response.message.content:
            yield TextDelta(text=response.message.content)
        for index, call in enumerate(response.message.tool_calls):
            yield ToolCallDelta(
                index=index, id=call.id, name=call.name, arguments=call.raw_arguments
            )
        yield Completed(response=response)

    def _response(self, data: Mapping[str, Any], request: ModelRequest) -> ModelResponse:
        calls = []
        for i, c in enumerate(data.get("tool_calls", ())):
            arguments = c.get("arguments", {})
            if isinstance(arguments, str):  # a script may send malformed JSON on purpose
                calls.append(
                    ModelToolCall.from_json_text(
                        id=c.get("id", f"call_{self._next}_{i}"), name=c["name"], text=arguments
                    )
                )
            else:
                calls.append(
                    ModelToolCall(
                        id=c.get("id", f"call_{self._next}_{i}"),
                        name=c["name"],
                        arguments=arguments,
                        raw_arguments=json.dumps(arguments),
                    )
                )
        usage_data = data.get("usage", {})
        usage = TokenUsage(  # "usage": null stands for a server that reports none
            input_tokens=(usage_data or {}).get("input", 0),
            output_tokens=(usage_data or {}).get("output", 0), reported=usage_data is not None,
        )
        cost = self.config.prices.cost(self.model, usage) if self.config is not None else None
        return ModelResponse(
            message=Message(
                role="assistant", content=data.get("text", ""), tool_calls=tuple(calls)
            ),
            usage=usage,
            stop_reason="tool_calls" if calls else data.get("stop_reason", "end"),
            model=request.model or self.model,
            cost_usd=data.get("cost_usd", cost),
            reasoning=str(data.get("reasoning") or ""),
        )
