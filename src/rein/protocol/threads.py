"""A thread as the protocol shows it: its turns folded from the store, and its ``Thread``.

Each turn of the thread is folded by its own :class:`~rein.protocol.feed.Feed` from what
the store holds: a graph turn's opening and its digest question (the turn's own log), the
turn's run events, and the turn's end when it ended without its run finishing. The same in
every process, so ``thread/read``, ``thread/resume``, an ACP ``session/load`` and the SDK's
``Thread.turns()`` agree. :func:`to_json` is Codex's ``Thread`` (every field the official
client requires).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rein.core.states import ApprovalStatus
from rein.core.version import VERSION
from rein.engine.cases.sessions import digest
from rein.engine.cases.sessions.replies import WORDS
from rein.protocol.feed import Feed
from rein.protocol.messages import Message, ServerRequest, ms
from rein.store.base import ThreadRow, ThreadTurnRow

if TYPE_CHECKING:
    from rein.engine.service import Harness


def feed_of(harness: Harness, turn: ThreadTurnRow) -> Feed:
    """The empty fold of one of ``harness``'s turns (commands run in its workspace)."""
    return Feed.of(turn, cwd=str(harness.workspace))


def feeds(harness: Harness, thread_id: str) -> list[Feed]:
    """Each turn of the thread folded from the store: the same in every process."""
    return [feed for feed, _ in folded(harness, thread_id)]


def replay(harness: Harness, thread_id: str) -> list[Message]:
    """Every notification the thread's turns gave, in order, folded again from the store
    (an ACP ``session/load`` replays them); questions are not asked again."""
    return [m for _, messages in folded(harness, thread_id) for m in messages
            if not isinstance(m, ServerRequest)]


def folded(harness: Harness, thread_id: str, *, write: bool = True
           ) -> list[tuple[Feed, list[Message]]]:
    """Each turn's fold and the messages it gave, in order (THREAD404). ``write`` false: a
    turn that will never start is shown ended, not recorded so."""
    sessions = harness.sessions
    out = []
    for turn in sessions.turns(thread_id):
        feed = feed_of(harness, turn)
        messages: list[Message] = []
        ended = sessions.end_of(turn, write=write)
        run_id = sessions.run_of(turn)
        if feed.graph is not None:
            messages += before_run(harness, feed, turn, ran=run_id is not None)
        if run_id is not None:
            for event in harness.log(run_id):
                messages += feed.apply(event)
        if ended is not None:  # after what its run recorded, if it began
            messages += feed.apply(ended)
        out.append((feed, messages))
    return out


def before_run(harness: Harness, feed: Feed, turn: ThreadTurnRow, *, ran: bool
               ) -> list[Message]:
    """A graph turn before its run: the opening, its digest question (and the answer),
    and, when it was not accepted, the end of a turn where nothing ran."""
    sessions = harness.sessions
    out = feed.opening(turn.created_at)
    if digest.of(turn) is None and not ran:
        # No question of its own (forked before it was answered, or older than the
        # queued question): nothing ran in this thread, and nothing will.
        return out + feed.not_run(turn.created_at, "cancel")
    for event in harness.log(sessions.log_of(turn)):
        if event.type != "turn/ended":  # the turn's end comes after its run's events
            out += feed.apply(event)
    question = sessions.question(turn)
    if question is not None and question.status not in (ApprovalStatus.PENDING,
                                                         ApprovalStatus.ACCEPTED):
        assert question.answered_at is not None
        out += feed.not_run(question.answered_at, WORDS[question.status])
    return out


def to_json(harness: Harness, row: ThreadRow, *, include_turns: bool = False
            ) -> dict[str, Any]:
    """The thread as Codex's ``Thread`` (its turns folded only with ``include_turns``: a
    listing reads one run row per thread, not every event)."""
    busy = harness.sessions.in_progress(row.thread_id) is not None
    status = {"type": "active", "activeFlags": []} if busy else {"type": "idle"}
    turns = [f.turn() for f in feeds(harness, row.thread_id)] if include_turns else []
    return shape(row, status=status, turns=turns)


def shape(row: ThreadRow, *, status: Mapping[str, Any], turns: list[dict[str, Any]]
          ) -> dict[str, Any]:
    """The thread as Codex's ``Thread`` (every field the official client requires)."""
    d = row.data
    return {"id": row.thread_id, "sessionId": row.thread_id, "preview": d.get("preview") or "",
            "ephemeral": bool(d.get("ephemeral")), "modelProvider": d.get("modelProvider") or
            "rein", "createdAt": ms(row.created_at) // 1000,
            "updatedAt": ms(row.updated_at) // 1000, "status": dict(status), "path": None,
            "cwd": d["cwd"], "cliVersion": VERSION, "source": "appServer",
            "name": d.get("name"), "forkedFromId": d.get("forkedFromId"), "projectId": None,
            "turns": turns}


__all__ = ["before_run", "feed_of", "feeds", "folded", "replay", "shape", "to_json"]
