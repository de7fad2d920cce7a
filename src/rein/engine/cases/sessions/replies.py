"""What each turn of a thread said: the person's words and the reply, read from the store.

A conversation turn's brief carries the thread's earlier turns (:mod:`.conversation`), each as
what the person sent (its text items and the input steered into it) and the turn's last
reply: a conversation turn's ``reply`` output, or the words rein itself puts at the end of a
graph turn (its run ended, or its graph was not approved). Those words are written here
once; the protocol's feed sends the very same ones as the turn's final answer
(:mod:`rein.protocol.feed`), so what a client saw and what the model is told agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rein.core.states import ApprovalStatus
from rein.engine.cases.sessions.conversation import text_of
from rein.store.base import Event

# How an answer to a graph turn's digest question reads in the turn's last message.
WORDS = {ApprovalStatus.DECLINED: "decline", ApprovalStatus.CANCELLED: "cancel",
         ApprovalStatus.TIMED_OUT: "timed out", ApprovalStatus.ACCEPTED: "accept",
         ApprovalStatus.PENDING: "pending"}


def not_run(decision: str) -> str:
    """A graph turn whose graph was not approved: nothing ran."""
    return f"the graph was not approved ({decision}); nothing ran"


def run_ended(run_id: str, status: Any) -> str:
    """A graph turn's run ended."""
    return f"run {run_id} {status}"


def said(items: Sequence[Mapping[str, Any]], run_events: Sequence[Event]) -> str:
    """What the person sent in one turn: its text, then what was steered into it."""
    steered = [str(e.payload.get("text") or "") for e in run_events
               if e.type == "input/steered"]
    return "\n\n".join([text_of(items), *steered])


def reply(*, graph: bool, run_events: Sequence[Event], refused: str | None) -> str:
    """A turn's last reply ("" when it has none), from its run's events. ``refused``: the
    decision word when a graph turn's digest question was answered other than accept (or
    it has none, and never ran)."""
    if graph:
        if refused is not None:
            return not_run(refused)
        for event in run_events:
            if event.type == "run/finished" and not event.payload.get("parent_run_id"):
                return run_ended(event.run_id, event.payload.get("status"))
        return ""
    replies = [e.payload["outputs"]["reply"] for e in run_events
               if e.type == "node/finished" and isinstance(e.payload.get("outputs"), Mapping)
               and isinstance(e.payload["outputs"].get("reply"), str)]
    return replies[-1] if replies else ""


__all__ = ["WORDS", "not_run", "reply", "run_ended", "said"]
