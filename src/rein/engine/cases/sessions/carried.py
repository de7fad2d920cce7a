"""What a new conversation turn's model reads of the thread's earlier turns: the transcript.

Each earlier turn is carried as the messages it was made of, in order, read from the store:
what the person sent (:func:`rein.engine.cases.sessions.replies.said`), then each answer of the
model (its text and its tool calls) and each tool's result, as the model worker recorded
them (already redacted: a secret is carried as ``[secret:NAME]``, never as its value). Only
the attempt that ended the turn is carried; a turn whose conversation was compacted is
carried from its summary on. A graph turn, or a turn whose model recorded nothing, is
carried as the person's words and the turn's last reply.

The messages are plain JSON in the shape of :func:`rein.workers.conversation.dump_messages`
and are written into the turn's graph (``x-rein-transcript``), so a resumed or retried turn
reads the very same ones. They are built from stored events only, so turn N+1 starts with
the same messages turn N did, byte for byte: a prefix a provider's prompt cache can reuse.
A tool call whose result was never recorded (the turn was interrupted) gets one saying so,
since every provider wants each call answered; a call id already used by an earlier turn
gets the turn's number appended, so ids stay unique in a request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rein.store.base import Event
from rein.workers.compaction import SUMMARY_HEADER

NODE = "turn"  # the one node of a conversation turn's graph (conversation.NODE)
NO_RESULT = "(no result: the turn ended before this call returned)"

Messages = list[dict[str, Any]]


def turn_messages(*, seq: int, said: str, reply: str, run_events: Sequence[Event],
                  conversation: bool, used: set[str]) -> Messages:
    """One earlier turn as messages. ``used``: the call ids carried so far (updated)."""
    out: Messages = [{"role": "user", "content": said}] if said else []
    items = _last_attempt(run_events) if conversation else []
    if not items:
        if reply:
            out.append({"role": "assistant", "content": reply})
        return out
    answer: dict[str, Any] | None = None
    open_calls: list[str] = []
    renamed: dict[str, str] = {}

    def close() -> None:
        nonlocal answer
        if answer is not None and (answer["content"] or answer.get("tool_calls")):
            out.append(answer)
        answer = None

    for kind, data in items:
        if kind == "usage":  # each model answer is recorded with its usage first
            close()
            answer = {"role": "assistant", "content": ""}
        elif kind == "message" and data.get("role", "assistant") == "assistant":
            answer = answer or {"role": "assistant", "content": ""}
            answer["content"] = str(data.get("text") or "")
        elif kind == "tool_call":
            answer = answer or {"role": "assistant", "content": ""}
            call_id = _unique(str(data.get("id")), seq, used)
            renamed[str(data.get("id"))] = call_id
            arguments = dict(data.get("arguments") or {})
            answer.setdefault("tool_calls", []).append(
                {"id": call_id, "name": str(data.get("name")), "arguments": arguments,
                 "raw_arguments": ""})
            open_calls.append(call_id)
        elif kind == "tool_result":
            close()
            call_id = renamed.get(str(data.get("id")), str(data.get("id")))
            if call_id in open_calls:
                open_calls.remove(call_id)
            message: dict[str, Any] = {"role": "tool", "content": str(data.get("content", "")),
                                       "tool_call_id": call_id}
            if not data.get("ok", True):
                message["is_error"] = True
            out.append(message)
        elif kind == "context_compaction":
            # The model went on from its summary: what it replaced is not carried.
            close()
            del out[1 if said else 0:]
            out.append({"role": "user", "content": SUMMARY_HEADER + str(data.get("summary"))})
            open_calls.clear()
    close()
    out += [{"role": "tool", "content": NO_RESULT, "tool_call_id": c, "is_error": True}
            for c in open_calls]
    return out


def _last_attempt(run_events: Sequence[Event]) -> list[tuple[str, Mapping[str, Any]]]:
    """The items of the turn node's last attempt, in order."""
    items = [(int(e.payload.get("attempt") or 1), str(e.payload.get("kind")),
              e.payload.get("data") or {}) for e in run_events
             if e.type == "item" and e.payload.get("node") == NODE]
    if not items:
        return []
    last = max(a for a, _, _ in items)
    return [(k, d) for a, k, d in items if a == last]


def _unique(call_id: str, seq: int, used: set[str]) -> str:
    out = call_id if call_id not in used else f"{call_id}-t{seq}"
    used.add(out)
    return out


__all__ = ["NO_RESULT", "SUMMARY_HEADER", "turn_messages"]
