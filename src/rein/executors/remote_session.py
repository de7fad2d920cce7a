"""A remote attempt that needs a person: it pauses the run in the store's approval queue and
continues when answered, as in process.

On the worker, the attempt gets a :class:`RemoteSession` for the engine's session it cannot
reach: ``load_state`` hands back the state the attempt saved before its last pause,
``ask`` answers from the answers the coordinator sent, and a question not answered yet is
noted and left unanswered, so the worker saves its state and raises ``WorkerPaused`` as it
would in process. The answer then carries the saved state and the questions
(:func:`paused_answer`).

On the coordinator, :func:`turn_of` and :func:`settle` do the rest with the engine's own
session: the questions go into the approval queue (the run waits there, whoever is down),
the worker's state is saved as the attempt's state in the run's trace, and when the run
continues the same attempt is enqueued again with the state and the answers, under a
workflow id of its own (``#<attempt>~<digest of the turn>``), so a coordinator resumed after
a crash attaches to that turn instead of starting it twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from rein.workers.base import Answer, AttemptSession, WorkerPaused

KEY = "x-rein-remote"  # the attempt state of a remote attempt, as the coordinator saves it


class RemoteSession:
    """The worker's stand-in for the engine's session of one attempt."""

    def __init__(self, turn: Mapping[str, Any]) -> None:
        self.state: Mapping[str, Any] | None = turn.get("state")
        self.answers: dict[str, Any] = dict(turn.get("answers") or {})
        self.asks: list[dict[str, Any]] = []
        self.saved = False

    def load_state(self) -> Mapping[str, Any] | None:
        return self.state

    def save_state(self, state: Mapping[str, Any] | None) -> None:
        self.state, self.saved = (None if state is None else dict(state)), True

    async def ask(self, key: str, request: Mapping[str, Any], *,
                  kind: str = "tool_call") -> tuple[str, Answer | None]:
        answered = self.answers.get(f"{kind}:{key}")
        if answered is not None:
            return str(answered["approval_id"]), answered["answer"]
        self.asks.append({"key": key, "request": dict(request), "kind": kind})
        return "", None  # asked on the coordinator once this attempt's answer reaches it

    def to_json(self, pause: WorkerPaused | None) -> dict[str, Any]:
        return {"saved": self.saved, "state": self.state, "asks": self.asks,
                "paused": None if pause is None else {"reason": pause.reason}}


async def turn_of(session: AttemptSession | None, *, may_ask: bool = True
                  ) -> Mapping[str, Any] | None:
    """What the worker needs of a paused remote attempt: its state and the answers to its
    questions, read from the approval queue (``None``: the attempt has no session; ``{}``: a
    first turn). Raises ``WorkerPaused`` while a question is still unanswered.

    ``may_ask``: whether the attempt can ask anything at all (it has tools or a profile).
    An attempt that cannot never paused, so its saved state is not looked up: that reads the
    run's events, which a map of many tool-less items would pay once per item."""
    if session is None:
        return None
    if not may_ask:
        return {}
    saved = session.load_state()
    remote = saved.get(KEY) if isinstance(saved, Mapping) else None
    if not isinstance(remote, Mapping) or not remote.get("asks"):
        return {}
    answers = await _answers(session, remote.get("asks") or [],
                             dict(remote.get("answers") or {}))
    return {"state": remote.get("state"), "answers": answers, "asks": remote.get("asks")}


async def _answers(session: AttemptSession, asks: list[Mapping[str, Any]],
                   answers: dict[str, Any]) -> dict[str, Any]:
    """``answers`` with those of ``asks`` (queued, idempotently); ``WorkerPaused`` on the
    first question nobody answered yet."""
    for ask in asks:
        slot = f"{ask['kind']}:{ask['key']}"
        if slot in answers:
            continue
        approval_id, answer = await session.ask(ask["key"], ask["request"], kind=ask["kind"])
        if answer is None:
            raise WorkerPaused("approval", approval_id, {"remote": True})
        answers[slot] = {"approval_id": approval_id, "answer": answer}
    return answers


def turn_suffix(turn: Mapping[str, Any] | None) -> str:
    """The workflow id suffix of a turn: none for the first, a digest for the later ones."""
    if not turn:
        return ""
    text = json.dumps(turn, sort_keys=True, default=str)
    return "~" + hashlib.sha256(text.encode()).hexdigest()[:12]


async def settle(session: AttemptSession | None, turn: Mapping[str, Any] | None,
                 remote: Mapping[str, Any] | None) -> bool:
    """Apply what the worker did with its session; ``True`` when it paused and every
    question already has an answer (go again at once). Raises ``WorkerPaused`` when the run
    must wait for a person, with the questions in the approval queue and the worker's state
    saved as the attempt's."""
    if session is None or not remote:
        return False
    state = remote.get("state") if remote.get("saved") else (turn or {}).get("state")
    if remote.get("paused") is None:  # finished: the state the worker left, usually none
        if remote.get("saved") or turn:
            session.save_state(None if state is None else {KEY: {"state": state}})
        return False
    answers = dict((turn or {}).get("answers") or {})
    asks = [*((turn or {}).get("asks") or []), *(remote.get("asks") or [])]
    session.save_state({KEY: {"state": state, "answers": answers, "asks": asks}})
    answers = await _answers(session, asks, answers)
    session.save_state({KEY: {"state": state, "answers": answers, "asks": asks}})
    return True


__all__ = ["KEY", "RemoteSession", "settle", "turn_of", "turn_suffix"]
