"""Stopping work on purpose, and telling it apart from an interrupt.

A node's task can be cancelled for two reasons. The engine may decide to stop it: a halt
after a failure (``policy.on_node_failure: halt``), a map's ``fail_fast`` after an item
failed, an operator's cancel. Or the process is being interrupted: Ctrl-C, a server shutting
down, an error of the store raised in a sibling task. Only the first is a cancel. An
interrupt writes nothing: the node stays in flight in the store, exactly as a kill leaves
it, and resuming runs it again (:mod:`rein.engine.run.recovery`).

So a ``CancelledError`` is never recorded where it is caught. Whoever decides to stop work
records it here, once the work it stopped has wound down: the node itself, and everything
that ran under it (the nodes of its loop iterations and map items, its stand-ins, the
child runs of its subgraphs), each ``cancelled`` with the reason, their open questions
closed. A run that ends leaves nothing in flight either (:func:`settle_run`).
"""

from __future__ import annotations

from collections.abc import Callable

from rein.core.ids import RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus, transition
from rein.engine.events import EventType, append
from rein.engine.run import approvals
from rein.engine.run.runtime import NodeAt, RunContext
from rein.store.base import NodeRow, Store, Transition
from rein.store.lineage import family

REASON = "x-rein-cancel-reason"


def stop_node(here: NodeAt, reason: str) -> None:
    """Record node ``here.nid``, whose task the caller cancelled on purpose and awaited, as
    ``cancelled``, with everything that ran under it. A node that had ended keeps its end."""
    state = here.state
    key = here.key
    if not state.status.terminal:
        transition(state, NodeStatus.CANCELLED, node=key)
        state.record = state.record.replace(finished_at=here.run.now()).noting({REASON: reason})
        here.save(EventType.NODE_CANCELLED, {"reason": reason})
    # The node's own open question too (it may have been waiting for a person).
    settle_under(here.run, lambda k: k == key or k.startswith((f"{key}[", f"{key}~")), reason)


def stop_scope(ctx: RunContext, path: str, reason: str) -> None:
    """Record what was in flight in scope instance ``path`` (a map item the caller stopped
    on purpose) as ``cancelled``."""
    settle_under(ctx, lambda k: k.startswith(f"{path}."), reason)


def settle_under(ctx: RunContext, under: Callable[[str], bool], reason: str) -> None:
    """Every unfinished node of ``ctx``'s run whose key ``under`` selects ends ``cancelled``,
    its open questions closed, and so does every child run started by one of them."""
    store, at = ctx.env.store, ctx.now()
    for node in store.nodes(ctx.env.run_id):
        if under(node.node_key):
            _cancel_row(store, node, reason, at)
    _close_questions(store, ctx.env.run_id, under, reason, at)
    for child in store.child_runs(ctx.env.run_id):
        if child.parent_node_key is not None and under(child.parent_node_key):
            _settle_family(store, child.run_id, reason, at, itself=True)


def settle_run(ctx: RunContext, status: RunStatus) -> None:
    """A run that ends leaves nothing in flight: every node of the run and of its child
    runs that had not ended ends ``cancelled``, each child run that had not ended ends
    ``cancelled``, and each question still open is closed (an answer to it is refused):
    every one when the run was cancelled; when it ended otherwise, every one but a
    checkpoint that is not required, which was never awaited and stays surfaced.
    Without this the record, ``runs show --json`` and the queue would say a stopped run
    still runs or waits. (The run's own end is the caller's to write.)"""
    cancelled = status is RunStatus.CANCELLED
    why = "the run was cancelled" if cancelled else f"the run ended {status.value}"
    _settle_family(ctx.env.store, ctx.env.run_id, why, ctx.now(), itself=False,
                   checkpoints=cancelled)


def _settle_family(store: Store, run_id: RunId, why: str, at: str, *, itself: bool,
                   checkpoints: bool = True) -> None:
    """``run_id`` and its child runs: unfinished nodes cancelled, questions closed (not the
    checkpoints unless ``checkpoints``), and each run that had not ended ends ``cancelled``
    (``run_id`` too when ``itself``)."""
    for member in family(store, run_id):
        for node in store.nodes(member.run_id):
            _cancel_row(store, node, why, at)
        _close_questions(store, member.run_id, lambda _: True, why, at,
                         checkpoints=checkpoints)
        if (itself or member.run_id != run_id) and not member.status.terminal:
            append(store, member.run_id, EventType.RUN_FINISHED,
                   {"status": RunStatus.CANCELLED.value}, at,
                   Transition(run_status=RunStatus.CANCELLED, finished_at=at))


def _cancel_row(store: Store, node: NodeRow, why: str, at: str) -> None:
    if node.status.terminal:
        return
    record = {**node.record, "status": NodeStatus.CANCELLED.value, "finished_at": at,
              REASON: why}
    row = node.replace(status=NodeStatus.CANCELLED, record=record)
    append(store, node.run_id, EventType.NODE_CANCELLED,
           {"node": node.node_key, "status": NodeStatus.CANCELLED.value, "reason": why,
            "was": node.status.value}, at, Transition(node=row))


def _close_questions(store: Store, run_id: RunId, under: Callable[[str], bool], why: str,
                     at: str, *, checkpoints: bool = True) -> None:
    """Close the open questions of ``run_id`` asked for a node ``under`` selects (a
    question about the whole graph has no node: ``under`` is asked about ``""``)."""
    for asked in store.approvals(run_id=run_id, status=ApprovalStatus.PENDING):
        if not checkpoints and asked.kind is ApprovalKind.CHECKPOINT:
            continue
        if under(str(asked.request.get("node") or "")):
            approvals.record_answer(store, asked, ApprovalStatus.CANCELLED,
                                    {"actor": "rein", "note": why}, at)


__all__ = ["REASON", "settle_run", "settle_under", "stop_node", "stop_scope"]
