"""OpenAI-compatible chat completions with tool calling, through the official ``openai`` SDK.

One implementation reaches OpenAI and every server that speaks the same API (vLLM, Ollama,
llama.cpp's server, LM Studio): set ``base_url`` in rein.toml. A local server needs no key.
The SDK's own retries are off; :mod:`rein.providers.retry` is the only retry layer.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import openai

from rein.core.frozen import Record, field
from rein.providers.errors import ProviderResponseError
from rein.providers.sdk import SdkProvider, assistant_response
from rein.providers.types import (
    Capabilities,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    StopReason,
    StreamEvent,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
)

_FINISH: dict[str, StopReason] = {
    "stop": "end",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "max_tokens",
    "content_filter": "refused",
}


class OpenAIChatProvider(SdkProvider):
    """Chat completions (``POST /chat/completions``), streaming and tool calls included."""

    capabilities = Capabilities(
        streaming=True, tool_calling=True, parallel_tool_calls=True, seed=True
    )
    sdk_errors: ClassVar[Any] = openai
    stops = _FINISH
    sdk_client = openai.AsyncOpenAI

    def _key_optional(self) -> bool:
        return self.config.base_url is not None

    def _missing_key_hint(self) -> str:
        return f"export {self.config.key_variable()}, or set base_url for a local server"

    async def _create(self, params: dict[str, Any]) -> Any:
        return await self._client.chat.completions.create(**params)

    def _stream_params(self, request: ModelRequest) -> dict[str, Any]:
        return {**super()._stream_params(request), "stream_options": {"include_usage": True}}

    def _accumulator(self) -> _Accumulator:
        return _Accumulator()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {"model": request.model, "messages": to_openai_messages(request)}
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in request.tools
            ]
            params["tool_choice"] = request.tool_choice
        if request.max_output_tokens is not None:
            # OpenAI's own API wants max_completion_tokens; compatible servers know max_tokens.
            key = self.config.options.get("max_tokens_param")
            key = key or ("max_completion_tokens" if self.config.base_url is None else "max_tokens")
            params[key] = request.max_output_tokens
        for name in ("temperature", "top_p", "seed"):
            value = getattr(request, name)
            if value is not None:
                params[name] = value
        return params

    def _response(self, raw: Any) -> ModelResponse:
        if not getattr(raw, "choices", None):
            raise ProviderResponseError(
                f"{self.name}: the response has no choices", provider=self.name
            )
        choice = raw.choices[0]
        msg = choice.message
        calls = tuple(
            ModelToolCall.from_json_text(
                id=c.id, name=c.function.name, text=c.function.arguments or ""
            )
            for c in (msg.tool_calls or ())
            if getattr(c, "function", None) is not None
        )
        return self._priced_response(text=msg.content or "", calls=calls, usage=_usage(raw.usage),
                                     vendor_stop=choice.finish_reason, model=raw.model or "")


def to_openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """rein messages → chat completions ``messages``."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for m in request.messages:
        match m.role:
            case "user":
                out.append({"role": "user", "content": m.content})
            case "assistant":
                item: dict[str, Any] = {"role": "assistant", "content": m.content or None}
                if m.tool_calls:
                    item["tool_calls"] = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": c.raw_arguments or json.dumps(dict(c.arguments)),
                            },
                        }
                        for c in m.tool_calls
                    ]
                out.append(item)
            case "tool":
                out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
    return out


def _usage(raw: Any) -> TokenUsage:
    if raw is None:
        return TokenUsage(reported=False)
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return TokenUsage(
        input_tokens=raw.prompt_tokens or 0,
        output_tokens=raw.completion_tokens or 0,
        cached_input_tokens=cached,
    )


class _Accumulator(Record):
    """Builds the final response from streamed chunks (the deltas are also passed on)."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish: str | None = None
    usage: TokenUsage = field(default_factory=lambda: TokenUsage(reported=False))
    model: str = ""

    def feed(self, chunk: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices or ():
            delta = choice.delta
            if delta is not None and delta.content:
                self.text.append(delta.content)
                events.append(TextDelta(text=delta.content))
            for tc in (delta.tool_calls if delta is not None else None) or ():
                slot = self.calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                name = tc.function.name if tc.function else None
                args = (tc.function.arguments if tc.function else None) or ""
                slot["id"] = tc.id or slot["id"]
                slot["name"] = name or slot["name"]
                slot["arguments"] += args
                events.append(ToolCallDelta(index=tc.index, id=tc.id, name=name, arguments=args))
            if choice.finish_reason:
                self.finish = choice.finish_reason
        return events

    def finish_response(self, requested_model: str) -> ModelResponse:
        calls = tuple(
            ModelToolCall.from_json_text(id=s["id"], name=s["name"], text=s["arguments"])
            for _, s in sorted(self.calls.items())
        )
        return assistant_response(
            text="".join(self.text),
            calls=calls,
            usage=self.usage,
            vendor_stop=self.finish,
            stops=_FINISH,
            model=self.model or requested_model,
        )
