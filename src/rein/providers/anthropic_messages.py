"""Anthropic Messages with tool use, through the official ``anthropic`` SDK.

Differences from chat completions that this module absorbs: the system prompt is a top-level
field; tool calls are ``tool_use`` content blocks with an already-parsed ``input``; tool
results go back as ``tool_result`` blocks inside a *user* turn (consecutive results share one
turn); ``max_tokens`` is required; input tokens served from the prompt cache are reported
apart from ``input_tokens`` and are added back here so usage means the same for every vendor.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import anthropic

from rein.core.frozen import Record, field
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

DEFAULT_MAX_TOKENS = 4096
_STOP: dict[str, StopReason] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "tool_use": "tool_calls",
    "max_tokens": "max_tokens",
    "refusal": "refused",
}
_CHOICE = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}


class AnthropicProvider(SdkProvider):
    """Messages API (``POST /v1/messages``), streaming and tool use included."""

    capabilities = Capabilities(
        streaming=True, tool_calling=True, parallel_tool_calls=True, seed=False
    )
    sdk_errors: ClassVar[Any] = anthropic
    stops = _STOP
    sdk_client = anthropic.AsyncAnthropic

    async def _create(self, params: dict[str, Any]) -> Any:
        return await self._client.messages.create(**params)

    def _accumulator(self) -> _Accumulator:
        return _Accumulator()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        max_tokens = request.max_output_tokens or self.config.options.get(
            "max_tokens", DEFAULT_MAX_TOKENS
        )
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": max_tokens,
            "messages": to_anthropic_messages(request),
        }
        if request.system:
            params["system"] = request.system
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in request.tools
            ]
            params["tool_choice"] = _CHOICE[request.tool_choice]
        # Sampling parameters are not in every SDK release's signature; send them as body fields.
        extra = {
            k: getattr(request, k)
            for k in ("temperature", "top_p")
            if getattr(request, k) is not None
        }
        if extra:
            params["extra_body"] = extra
        return params

    def _response(self, raw: Any) -> ModelResponse:
        text: list[str] = []
        calls: list[ModelToolCall] = []
        for block in raw.content or ():
            if block.type == "text":
                text.append(block.text)
            elif block.type == "tool_use":
                args = block.input if isinstance(block.input, dict) else {}
                calls.append(
                    ModelToolCall(
                        id=block.id, name=block.name, arguments=args, raw_arguments=json.dumps(args)
                    )
                )
        return self._priced_response(text="".join(text), calls=calls, usage=_usage(raw.usage),
                                     vendor_stop=raw.stop_reason, model=raw.model or "")


def to_anthropic_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """rein messages → Messages API ``messages`` (tool results folded into user turns)."""
    out: list[dict[str, Any]] = []
    for m in request.messages:
        match m.role:
            case "user":
                out.append({"role": "user", "content": m.content})
            case "assistant":
                blocks: list[dict[str, Any]] = []
                if m.content:
                    blocks.append({"type": "text", "text": m.content})
                blocks += [
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
                    for c in m.tool_calls
                ]
                out.append({"role": "assistant", "content": blocks or m.content})
            case "tool":
                block = {
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id,
                    "content": m.content,
                    "is_error": m.is_error,
                }
                last = out[-1] if out else None
                if last and last["role"] == "user" and isinstance(last["content"], list):
                    last["content"].append(block)
                else:
                    out.append({"role": "user", "content": [block]})
    return out


def _usage(raw: Any) -> TokenUsage:
    if raw is None:
        return TokenUsage(reported=False)
    cached = getattr(raw, "cache_read_input_tokens", None) or 0
    written = getattr(raw, "cache_creation_input_tokens", None) or 0
    return TokenUsage(
        input_tokens=(raw.input_tokens or 0) + cached + written,
        output_tokens=raw.output_tokens or 0,
        cached_input_tokens=cached,
    )


class _Accumulator(Record):
    """Builds the final message from raw stream events."""

    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    input_usage: Any = None
    output_tokens: int = 0
    stop: str | None = None
    model: str = ""

    def feed(self, event: Any) -> list[StreamEvent]:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            self.model = event.message.model or self.model
            self.input_usage = event.message.usage
        elif kind == "content_block_start":
            block = event.content_block
            slot = {
                "type": block.type,
                "text": "",
                "id": getattr(block, "id", ""),
                "name": getattr(block, "name", ""),
                "json": "",
            }
            self.blocks[event.index] = slot
            if block.type == "tool_use":
                return [ToolCallDelta(index=event.index, id=slot["id"], name=slot["name"])]
        elif kind == "content_block_delta":
            slot = self.blocks.setdefault(event.index, {"type": "text", "text": "", "json": ""})
            delta = event.delta
            if delta.type == "text_delta":
                slot["text"] += delta.text
                return [TextDelta(text=delta.text)]
            if delta.type == "input_json_delta":
                slot["json"] += delta.partial_json
                return [ToolCallDelta(index=event.index, arguments=delta.partial_json)]
        elif kind == "message_delta":
            self.stop = event.delta.stop_reason or self.stop
            if event.usage is not None:
                self.output_tokens = event.usage.output_tokens or self.output_tokens
        return []

    def finish_response(self, requested_model: str) -> ModelResponse:
        text = "".join(b["text"] for _, b in sorted(self.blocks.items()) if b["type"] == "text")
        calls = tuple(
            ModelToolCall.from_json_text(id=b["id"], name=b["name"], text=b["json"])
            for _, b in sorted(self.blocks.items())
            if b["type"] == "tool_use"
        )
        base = _usage(self.input_usage)
        usage = TokenUsage(
            input_tokens=base.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=base.cached_input_tokens,
            reported=base.reported,
        )
        return assistant_response(
            text=text,
            calls=calls,
            usage=usage,
            vendor_stop=self.stop,
            stops=_STOP,
            model=self.model or requested_model,
        )
