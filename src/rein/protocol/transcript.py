"""A thread's turns as a reader sees them: each turn's items in order, read from the feed.

This is not a fold of its own. Each turn's run events go through the turn's
:class:`~rein.protocol.feed.Feed` (the fold the app-server serves), and what the feed says
is collected: an item as ``item/started`` announced it, replaced by its ``item/completed``
(authoritative), each lifecycle hook's run where it completed, the plan steps, the token
usage, the questions still open. A surface that shows a conversation (the web console)
renders this and decides nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rein.core.frozen import Frozen
from rein.errors import ReinError
from rein.protocol.messages import ServerRequest
from rein.protocol.threads import feed_of
from rein.store.base import ThreadTurnRow

if TYPE_CHECKING:
    from rein.engine.service import Harness


class TurnView(Frozen):
    """One turn: its input, its items in order, and where it stands."""

    turn_id: str
    seq: int  # 1 for the thread's first turn
    kind: str  # "conversation" | "graph"
    graph: str | None  # the graph file a turn ran (a conversation turn's is rein's own)
    run_id: str | None  # None until the turn's run exists
    created_at: str
    status: str  # inProgress | completed | interrupted | failed
    error: str | None
    items: tuple[Mapping[str, Any], ...]  # Codex items, plus {"type": "hookRun", "run": …}
    plan: tuple[Mapping[str, str], ...]  # a graph turn's steps: {"step", "status"}
    usage: Mapping[str, int]  # the turn's total tokens, as thread/tokenUsage/updated said
    pending: tuple[ServerRequest, ...]  # questions not answered yet, in the order asked
    last_seq: int  # the last event of the run read (0: none yet)


def turns(harness: Harness, thread_id: str, *, write: bool = True) -> list[TurnView]:
    """Every turn of the thread, in order (THREAD404 for an unknown thread). ``write``
    false: a turn that will never start is shown ended, not recorded so
    (:meth:`rein.engine.cases.sessions.Sessions.end_of`)."""
    return [_view(harness, t, write=write) for t in harness.sessions.turns(thread_id)]


def turn(harness: Harness, thread_id: str, turn_id: str, *, write: bool = True
         ) -> TurnView:
    """One turn of the thread (THREAD404 for an unknown thread or turn)."""
    for t in harness.sessions.turns(thread_id):
        if t.turn_id == turn_id:
            return _view(harness, t, write=write)
    raise ReinError(f"no turn {turn_id!r} in thread {thread_id}", code="THREAD404",
                    hint="open the thread's page for its turns")


def _view(harness: Harness, row: ThreadTurnRow, *, write: bool) -> TurnView:
    sessions = harness.sessions
    feed = feed_of(harness, row)
    entries: dict[str, Mapping[str, Any]] = {}
    plan: list[Mapping[str, str]] = []
    usage: dict[str, int] = {}
    hooks = 0

    def heard(messages: list[Any]) -> None:
        nonlocal plan, usage, hooks
        for m in messages:
            if isinstance(m, ServerRequest):
                continue
            params = m.params
            if m.method in ("item/started", "item/completed"):
                item = params["item"]
                entries[str(item["id"])] = dict(item)
            elif m.method == "hook/completed":
                hooks += 1
                entries[f"{row.turn_id}:hook-{hooks}"] = {
                    "type": "hookRun", "id": f"{row.turn_id}:hook-{hooks}", "run": params["run"]}
            elif m.method == "turn/plan/updated":
                plan = [dict(s) for s in params.get("plan") or ()]
            elif m.method == "thread/tokenUsage/updated":
                usage = dict((params.get("tokenUsage") or {}).get("total") or {})

    if feed.graph is not None:
        heard(feed.opening(row.created_at))
    ended = sessions.end_of(row, write=write)  # it ended without its run finishing
    run_id = sessions.run_of(row)
    last = 0
    if run_id is not None:
        for event in harness.log(run_id):
            heard(feed.apply(event))
            last = event.seq
    if ended is not None:
        heard(feed.apply(ended))
    return TurnView(turn_id=row.turn_id, seq=row.seq,
                    kind=str(row.input.get("kind") or "conversation"),
                    graph=str(row.input["graph"]) if row.input.get("graph") else None,
                    run_id=run_id, created_at=row.created_at, status=feed.status,
                    error=feed.error, items=tuple(entries.values()), plan=tuple(plan),
                    usage=usage, pending=tuple(feed.pending.values()), last_seq=last)


__all__ = ["TurnView", "turn", "turns"]
