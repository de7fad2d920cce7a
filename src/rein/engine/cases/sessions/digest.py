"""A graph turn's digest question, kept in the approval queue until it is answered.

A graph turn asks before its run exists: may this graph run, as planned, by its digest?
The question is an entry of the one approval queue (kind ``graph``), written with the turn
itself, so it outlives the process that asked it: a server that resumes the thread asks it
again, ``rein approvals accept`` answers it from another terminal, and the process that
drives the turn starts the run under exactly the digest accepted (DESIGN decision 6).

The run does not exist yet, so the entry and its events are kept under the turn's id where
a run id would be (``approvals.run_id`` is the turn id, and its ``approval/requested`` and
``approval/answered`` events are that id's log); :func:`answer_of` and :func:`wait` read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.ids import ApprovalId, RunId
from rein.core.states import ApprovalKind, ApprovalStatus
from rein.engine import events
from rein.store.base import ApprovalRow, Store, ThreadTurnRow, Transition


def prompt(plan: Mapping[str, Any]) -> str:
    """What the person is asked: the graph, by id and digest."""
    return f"Run graph {plan.get('id')} as planned (digest {plan.get('digest')})?"


def ask(store: Store, *, approval_id: str, thread_id: str, turn_id: str, graph: str,
        plan: Mapping[str, Any], now: str) -> ApprovalRow:
    """Queue the question (call it in the transaction that records the turn)."""
    digest = str(plan.get("digest"))
    row = ApprovalRow(approval_id=ApprovalId(approval_id), run_id=RunId(turn_id),
                      key=f"graph:{digest}", kind=ApprovalKind.GRAPH,
                      status=ApprovalStatus.PENDING, digest=digest,
                      request={"prompt": prompt(plan), "thread": thread_id, "turn": turn_id,
                               "graph": graph, "graph_id": plan.get("id")},
                      created_at=now)
    events.append(store, RunId(turn_id), events.EventType.APPROVAL_REQUESTED, {
        "approval_id": row.approval_id, "kind": "graph", "key": row.key,
        "prompt": row.request["prompt"], "digest": digest}, now, Transition(approval=row))
    return row


def of(turn: ThreadTurnRow) -> str | None:
    """The id of a graph turn's digest question, if it has one."""
    value = turn.input.get("digestApproval")
    return str(value) if value else None


def answer_of(store: Store, turn: ThreadTurnRow) -> ApprovalStatus | None:
    """How the question was answered (None: it waits, or the turn has none)."""
    approval_id = of(turn)
    row = store.get_approval(approval_id) if approval_id else None
    if row is None or row.status is ApprovalStatus.PENDING:
        return None
    return row.status


def waiting(store: Store, turn: ThreadTurnRow) -> bool:
    """Whether a graph turn without a run is still going: its question waits, or it was
    accepted and the run is about to start (or its process died before it could)."""
    if of(turn) is None:
        return False
    return answer_of(store, turn) in (None, ApprovalStatus.ACCEPTED)


async def wait(store: Store, turn: ThreadTurnRow) -> ApprovalStatus:
    """The answer, once it is given, here or in another process (read from the store)."""
    approval_id = of(turn)
    assert approval_id is not None
    async for event in events.subscribe(store, turn.turn_id):
        if event.type == "approval/answered" and \
                event.payload.get("approval_id") == approval_id:
            return ApprovalStatus(str(event.payload.get("status")))
    raise AssertionError("unreachable: subscribe without until_ended never ends")


def run_of(store: Store, turn: ThreadTurnRow) -> str | None:
    """The run an accepted graph turn started, when its process died before recording it:
    the first run of the graph's digest started since the question was answered."""
    approval_id = of(turn)
    row = store.get_approval(approval_id) if approval_id else None
    if row is None or row.status is not ApprovalStatus.ACCEPTED or row.answered_at is None:
        return None
    runs = [r for r in store.list_runs() if r.graph_digest == row.digest
            and r.started_at >= row.answered_at and r.parent_run_id is None]
    return min(runs, key=lambda r: r.started_at).run_id if runs else None
