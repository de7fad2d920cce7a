"""Compacting a model attempt's conversation when it nears the context window.

The model worker knows its window when the tier route declares it (``context_tokens`` in
``[tiers.<tier>]``). When a model turn's input reaches :data:`THRESHOLD` of it, the next turn
starts by compacting: the ``PreCompact`` hooks run (``trigger: "auto"``; a block keeps the
conversation as it is), the model is asked for a summary of the work so far (no tools
offered), and the conversation continues from the brief and that summary. The messages it
replaced are recorded, redacted, in the ``contextCompaction`` item, so the store keeps the
original conversation; the model's own tool calls of the pending answer are never cut, since
compaction happens only between a tool result and the next model call. A conversation turn
that carries the thread's earlier turns before its brief (``AttemptRequest.transcript``) has
no measured input before its first call: :func:`estimate` stands in for it, so turns that
would not fit are compacted first, and the brief kept is this turn's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rein.providers.types import Message, ToolSpec
from rein.tools.hooks import HookRunner
from rein.workers.conversation import dump_messages

#: The share of the context window a turn's input may reach before the conversation is
#: compacted: room is left for the summary call itself and the next answer.
THRESHOLD = 0.8

SUMMARY_REQUEST = (
    "The conversation is nearing the context window and will be replaced by your summary. "
    "Write that summary now, for yourself: the task, what you have done (files, commands, "
    "results), what you learned, and what is left to do. Answer with the summary only."
)
SUMMARY_HEADER = "Summary of the work so far (the conversation was compacted to fit the " \
                 "context window):\n"


def due(context_tokens: int | None, last_input: int | None, messages: list[Message]) -> bool:
    """Whether the conversation must be compacted before the next model call."""
    return (context_tokens is not None and last_input is not None and len(messages) > 2
            and last_input >= THRESHOLD * context_tokens)


async def pre_compact(hooks: HookRunner | None) -> tuple[str | None, str | None]:
    """``PreCompact``: (the reason a hook blocked it, and which hook), or (None, None)."""
    if hooks is None:
        return None, None
    chain = await hooks.run("PreCompact", {"trigger": "auto", "custom_instructions": ""})
    return chain.blocked, chain.blocked_by


def compacted(messages: list[Message], summary: str, brief: int = 0) -> list[Message]:
    """The conversation after compaction: the brief (message ``brief``: the first, unless
    a conversation's earlier turns come before it), then the summary."""
    return [messages[brief], Message(role="user", content=SUMMARY_HEADER + summary)]


def estimate(system: str, messages: list[Message], tools: tuple[ToolSpec, ...]) -> int:
    """The input tokens of a request not sent yet, estimated at four characters a token:
    what decides whether the earlier turns a conversation carries fit the window."""
    text = json.dumps([system, dump_messages(messages),
                       [[t.name, t.description, dict(t.parameters)] for t in tools]])
    return len(text) // 4


def record(index: int, replaced: list[Message], summary: str, *, last_input: int,
           context_tokens: int, redact: Callable[[str], str]) -> dict[str, Any]:
    """The ``contextCompaction`` item: what was replaced (redacted) and by what."""
    data: dict[str, Any] = json.loads(redact(json.dumps({
        "index": index, "trigger": "auto", "input_tokens": last_input,
        "context_tokens": context_tokens, "summary": summary,
        "replaced_messages": len(replaced), "replaced": dump_messages(replaced),
    })))
    return data
