"""rein's own request, response and stream-event types, whatever the vendor.

Providers translate these to and from their SDK's shapes at the edge; nothing above the
provider layer ever sees a vendor type. Messages follow the common chat shape: a system
prompt, then user / assistant / tool turns, where an assistant turn may carry tool calls and
a tool turn answers exactly one of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from rein.core.frozen import Frozen, field

Role = Literal["user", "assistant", "tool"]
ToolChoice = Literal["auto", "required", "none"]


class ToolSpec(Frozen):
    """A tool offered to the model: name, description, JSON Schema of the arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


class ModelToolCall(Frozen):
    """A tool call the model made. ``arguments`` is parsed; ``raw_arguments`` is as sent."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    raw_arguments: str = ""
    parse_error: str | None = None  # the model sent arguments that are not a JSON object

    @classmethod
    def from_json_text(cls, *, id: str, name: str, text: str) -> ModelToolCall:
        """Parse arguments the way every OpenAI-style API sends them: a JSON string."""
        try:
            value = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            return cls(id=id, name=name, arguments={}, raw_arguments=text, parse_error=str(exc))
        if not isinstance(value, dict):
            return cls(
                id=id,
                name=name,
                arguments={},
                raw_arguments=text,
                parse_error="arguments must be a JSON object",
            )
        return cls(id=id, name=name, arguments=value, raw_arguments=text)


class Message(Frozen):
    """One turn of the conversation."""

    role: Role
    content: str = ""
    tool_calls: tuple[ModelToolCall, ...] = ()  # assistant turns only
    tool_call_id: str | None = None  # tool turns only: which call this answers
    is_error: bool = False  # tool turns: the call failed or was refused


class ModelRequest(Frozen):
    """One call to a model."""

    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = "auto"
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None


class TokenUsage(Frozen):
    """Tokens one call used, as the vendor reported them. ``reported`` is false when the
    vendor said nothing of them (an OpenAI-compatible server may leave ``usage`` out): the
    zeros are then not a count, and no cost follows from them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # part of input_tokens served from a prompt cache
    reported: bool = True

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reported=self.reported and other.reported,
        )


StopReason = Literal["end", "tool_calls", "max_tokens", "refused", "other"]


class ModelResponse(Frozen):
    """What a call returned. ``cost_usd`` is None when the model has no price in the table."""

    message: Message
    usage: TokenUsage
    stop_reason: StopReason
    model: str  # the model the vendor says answered
    cost_usd: float | None = None
    vendor_stop_reason: str | None = None
    reasoning: str = ""  # a summary of the model's reasoning, when the vendor gives one


class TextDelta(Frozen):
    """A piece of assistant text, as it streams."""

    text: str


class ToolCallDelta(Frozen):
    """A piece of a tool call, as it streams (``index`` orders parallel calls)."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class Completed(Frozen):
    """The end of a stream: the whole response, authoritative over the deltas."""

    response: ModelResponse


StreamEvent = TextDelta | ToolCallDelta | Completed


class Capabilities(Frozen):
    """What a provider can do. Callers test flags, never ``isinstance``."""

    streaming: bool = True
    tool_calling: bool = True
    parallel_tool_calls: bool = True
    seed: bool = False
    structured_output: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)


def stop_reason(vendor: str | None, mapping: Mapping[str, StopReason]) -> StopReason:
    """Map a vendor's stop/finish reason to rein's; unknown values become ``other``."""
    return mapping.get(vendor or "", "other")
