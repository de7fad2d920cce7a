"""A model attempt's conversation as plain JSON, so it survives a pause in the store.

When a tool call waits for a person the model worker saves where it stands — the messages so
far, the tool calls of the last answer not yet run, what was spent, the git refs it must
compare at the end — and picks it up again when the run continues, possibly in another
process. The format carries a version (STYLE.md 12): a state of another version is not
resumed; the attempt starts over instead, which is always safe because nothing is lost
but the model's work so far.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from rein.core.frozen import Record, field
from rein.core.usage import Usage
from rein.providers.types import Message, ModelToolCall
from rein.workers.base import AttemptRequest

STATE_VERSION = 1


def dump_call(call: ModelToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": dict(call.arguments),
                           "raw_arguments": call.raw_arguments}
    if call.parse_error is not None:
        out["parse_error"] = call.parse_error
    return out


def load_call(data: Mapping[str, Any]) -> ModelToolCall:
    return ModelToolCall(id=str(data["id"]), name=str(data["name"]),
                         arguments=dict(data.get("arguments") or {}),
                         raw_arguments=str(data.get("raw_arguments", "")),
                         parse_error=data.get("parse_error"))


def dump_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Messages as JSON objects (only the fields that are set)."""
    out = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            item["tool_calls"] = [dump_call(c) for c in m.tool_calls]
        if m.tool_call_id is not None:
            item["tool_call_id"] = m.tool_call_id
        if m.is_error:
            item["is_error"] = True
        out.append(item)
    return out


def load_messages(data: Iterable[Mapping[str, Any]]) -> list[Message]:
    return [Message(role=m["role"], content=str(m.get("content", "")),
                    tool_calls=tuple(load_call(c) for c in m.get("tool_calls") or ()),
                    tool_call_id=m.get("tool_call_id"), is_error=bool(m.get("is_error")))
            for m in data]


class LoopState(Record):
    """Where a model attempt stands between two steps of its loop."""

    messages: list[Message] = field(default_factory=list)
    pending: list[ModelToolCall] = field(default_factory=list)  # calls of the last answer
    usage: Usage = field(default_factory=Usage)
    cost_known: bool = True
    elapsed: float = 0.0  # wall-clock seconds spent before the pause
    reminded: bool = False
    refs: dict[str, str] | None = None  # git refs at the start of the attempt
    # Calls whose PreToolUse chain ran ({id: {"ask", "context"}}): a resumed call is not
    # hooked twice. And every hook run of the attempt so far, for the record.
    hooked: dict[str, dict[str, Any]] = field(default_factory=dict)
    hook_runs: list[dict[str, Any]] = field(default_factory=list)
    steered: int = 0  # how many texts added mid-turn (turn/steer) the model has read
    # Where the node's brief is in ``messages``: after the earlier turns a conversation turn
    # carries (AttemptRequest.transcript); 0 once compaction has replaced them.
    opening: int = 0

    def to_json(self) -> dict[str, Any]:
        u = self.usage
        return {
            "version": STATE_VERSION,
            "messages": dump_messages(self.messages),
            "pending": [dump_call(c) for c in self.pending],
            "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                      "cost_usd": u.cost_usd, "tool_calls": u.tool_calls,
                      "agent_steps": u.agent_steps},
            "cost_known": self.cost_known,
            "elapsed": self.elapsed,
            "reminded": self.reminded,
            "refs": self.refs,
            "hooked": self.hooked,
            "hook_runs": self.hook_runs,
            "steered": self.steered,
            "opening": self.opening,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoopState | None:
        """The saved state, or ``None`` when it is of another version or malformed."""
        if not isinstance(data, Mapping) or data.get("version") != STATE_VERSION:
            return None
        try:
            u = data.get("usage") or {}
            return cls(
                messages=load_messages(data.get("messages") or ()),
                pending=[load_call(c) for c in data.get("pending") or ()],
                usage=Usage(input_tokens=u.get("input_tokens"),
                            output_tokens=u.get("output_tokens"), cost_usd=u.get("cost_usd"),
                            tool_calls=int(u.get("tool_calls", 0)),
                            agent_steps=int(u.get("agent_steps", 0))),
                cost_known=bool(data.get("cost_known", True)),
                elapsed=float(data.get("elapsed", 0.0)),
                reminded=bool(data.get("reminded", False)),
                refs=dict(data["refs"]) if isinstance(data.get("refs"), Mapping) else None,
                hooked={str(k): dict(v) for k, v in (data.get("hooked") or {}).items()},
                hook_runs=[dict(r) for r in data.get("hook_runs") or ()],
                steered=int(data.get("steered", 0)),
                opening=int(data.get("opening", 0)),
            )
        except (KeyError, TypeError, ValueError):
            return None


def unseal(request: AttemptRequest, saved: Mapping[str, Any]) -> Mapping[str, Any]:
    """A saved state with the node's secrets put back where they were redacted."""
    text = json.dumps(dict(saved))
    for name in request.secret_names:
        value = request.env.get(name)
        if value:
            text = text.replace(f"[secret:{name}]", json.dumps(value)[1:-1])
    return dict(json.loads(text))
