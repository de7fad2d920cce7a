"""Executing one node (AGS §17.7): adopt it from the store, or run its kind and persist it.

Common to every kind: the memo check (a node already terminal in the store is adopted, not
re-run) and the final transition written with its event. The steps a kind takes itself
(inputs, human checkpoints) are in :mod:`rein.engine.node_steps`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.states import NodeStatus
from rein.engine import kinds
from rein.engine.events import EventType
from rein.engine.outcome import NodeOutcome
from rein.engine.runtime import NodeState, RunContext, ScopeInstance
from rein.engine.signals import Paused
from rein.engine.transitions import restore, transition


async def execute_node(ctx: RunContext, inst: ScopeInstance, nid: str) -> None:
    """Run node ``nid`` of ``inst`` to a terminal state (or a pause) and persist it."""
    state = inst.states[nid]
    key = inst.key(nid)
    known = ctx.state.memo.get(key)
    if known is not None and known.status.terminal and not known.record.get("x-rein-redacted"):
        _adopt(ctx, inst, nid, known.record)
        return
    if known is not None and not known.status.terminal:
        # Paused mid-retries in an earlier process: keep the attempts that already ended,
        # so that resuming adopts them instead of running and judging them again.
        state.record["started_at"] = known.record.get("started_at", ctx.now())
        closed = [dict(a) for a in known.record.get("attempts") or []
                  if a.get("status") not in (None, "succeeded")]
        if closed:
            state.record["attempts"] = closed
    node = inst.model.nodes[nid]
    kind = inst.model.node_type(nid)
    started = ctx.clock.monotonic()
    transition(state, NodeStatus.RUNNING)
    at = ctx.now()
    state.record.setdefault("started_at", at)
    # Held: nothing is done on the node's account before its next write (an attempt
    # starting, a question asked, its end), which commits both; lost in a crash, the node
    # simply had not started.
    ctx.save_node(inst, nid, EventType.NODE_STARTED, {"type": kind, "title": node.get("title")},
                  hold=True, at=at)
    # Nothing is written when the node's task is cancelled or an exception passes through:
    # that is an interrupt (Ctrl-C, a server shutting down, a store error in a sibling),
    # and the node stays in flight in the store, exactly as after a kill, so that resuming
    # runs it again. A cancel the engine means (a halt, fail_fast, an operator) is recorded
    # by whoever decided it (rein.engine.stops).
    try:
        outcome = await kinds.run(ctx, inst, nid, inst.model.specs[nid])
    except Paused as pause:
        transition(state, NodeStatus.AWAITING_HUMAN if pause.reason == "human"
                   else NodeStatus.RUNNING, node=key)
        ctx.save_node(inst, nid, EventType.NODE_WAITING, {"reason": pause.reason, **pause.detail})
        raise
    _apply(state, outcome, node=key)
    state.duration = round(ctx.clock.monotonic() - started, 6)
    state.record["finished_at"] = at = ctx.now()
    state.record["x-rein-duration-seconds"] = state.duration
    if state.status is NodeStatus.SUCCEEDED and _undone(inst, nid):
        ctx.state.completions.append((state.record["finished_at"], inst, nid))
    # Held: what the node's end sets off (the next map item or a lone successor starting,
    # the scope's edges) writes next, before anything awaits, and commits it; an empty
    # scheduling step keeps it held. A step that writes commits it first, on its own, and
    # the loop's next turn at the latest (rein.engine.events.append), so no worker, person
    # or other process can learn of the end, or of what follows from it, before it is
    # committed: a crash can only take it with everything that came after it.
    ctx.save_node(inst, nid, EventType.NODE_FINISHED, _finish_payload(state.outputs, node, state),
                  hold=True, at=at)


def _apply(state: NodeState, outcome: NodeOutcome, *, node: str) -> None:
    """The one place a kind's outcome becomes the node's state: its terminal status
    (checked), what it produced, and the record fields its end adds."""
    transition(state, outcome.status, node=node)
    if outcome.outputs is not None:
        state.outputs = dict(outcome.outputs)
    if outcome.decision is not None:
        state.decision = outcome.decision
    state.degraded = outcome.degraded
    state.unabsorbed = outcome.unabsorbed
    state.record.update(outcome.record)


def _finish_payload(outputs: Mapping[str, Any], node: Mapping[str, Any], state: Any
                    ) -> dict[str, Any]:
    declared = node.get("outputs")
    specs: Mapping[str, Any] = declared if isinstance(declared, Mapping) else {}
    shown = {k: v for k, v in outputs.items()
             if not (isinstance(specs.get(k), Mapping) and specs[k].get("redact"))}
    out: dict[str, Any] = {"outputs": shown, "attempts": state.attempts}
    if state.decision is not None:
        out["decision"] = state.decision
    return out


def _adopt(ctx: RunContext, inst: ScopeInstance, nid: str, record: Mapping[str, Any]) -> None:
    """Take a node's terminal state from the store instead of running it again."""
    state = inst.states[nid]
    restore(state, NodeStatus(record["status"]), node=inst.key(nid))
    state.adopt(record)
    if state.status is NodeStatus.SUCCEEDED and _undone(inst, nid):
        ctx.state.completions.append((str(record.get("finished_at", "")), inst, nid))


def _undone(inst: ScopeInstance, nid: str) -> bool:
    """Whether a node names a compensation to run if the run fails: only those are kept
    in the run's completions, which would otherwise hold every scope instance (every map
    item's) until the run ends."""
    return bool(inst.model.specs[nid].failure.compensation)
