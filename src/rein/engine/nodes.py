"""Executing one node (AGS §17.7): adopt it from the store, or run its kind and persist it.

Common to every kind: the memo check (a node already terminal in the store is adopted, not
re-run), resolving inputs once before the first attempt (RT033), the human checkpoints of
``node.human``, and the final transition written with its event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus
from rein.engine import approvals
from rein.engine.expressions import render
from rein.engine.runtime import Paused, RunContext, ScopeInstance
from rein.engine.scheduler import condition, diagnostic, value


class InputsMissing(Exception):
    """A required input resolved to nothing (RT033): the node fails before any attempt."""


class CheckpointRejected(Exception):
    """A person said no at a non-gate checkpoint: the attempt fails ``permission_denied``."""

    def __init__(self, stage: str, approval_id: str) -> None:
        super().__init__(f"checkpoint {stage} was rejected ({approval_id})")
        self.stage = stage


async def execute_node(ctx: RunContext, inst: ScopeInstance, nid: str) -> None:
    """Run node ``nid`` of ``inst`` to a terminal state (or a pause) and persist it."""
    state = inst.states[nid]
    key = inst.key(nid)
    known = ctx.memo.get(key)
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
    state.status = NodeStatus.RUNNING
    state.record.setdefault("started_at", ctx.now())
    ctx.save_node(inst, nid, "node/started", {"type": kind, "title": node.get("title")})
    try:
        from rein.engine import kinds

        await kinds.run(ctx, inst, nid, node, kind)
    except Paused as pause:
        state.status = (NodeStatus.AWAITING_HUMAN if pause.reason == "human"
                        else NodeStatus.RUNNING)
        ctx.save_node(inst, nid, "node/waiting", {"reason": pause.reason, **pause.detail})
        raise
    except asyncio.CancelledError:
        state.status = NodeStatus.CANCELLED
        state.record["finished_at"] = ctx.now()
        ctx.save_node(inst, nid, "node/cancelled", {"reason": "cancelled"})
        raise
    state.duration = round(ctx.clock.monotonic() - started, 6)
    state.record["finished_at"] = ctx.now()
    state.record["x-rein-duration-seconds"] = state.duration
    if state.status is NodeStatus.SUCCEEDED:
        ctx.completions.append((state.record["finished_at"], inst, nid))
    ctx.save_node(inst, nid, "node/finished", _finish_payload(state.outputs, node, state))


def _finish_payload(outputs: Mapping[str, Any], node: Mapping[str, Any], state: Any
                    ) -> dict[str, Any]:
    specs = node.get("outputs") if isinstance(node.get("outputs"), Mapping) else {}
    shown = {k: v for k, v in outputs.items()
             if not (isinstance(specs.get(k), Mapping) and specs[k].get("redact"))}
    out: dict[str, Any] = {"outputs": shown, "attempts": state.attempts}
    if state.decision is not None:
        out["decision"] = state.decision
    return out


def _adopt(ctx: RunContext, inst: ScopeInstance, nid: str, record: Mapping[str, Any]) -> None:
    """Take a node's terminal state from the store instead of running it again."""
    state = inst.states[nid]
    state.status = NodeStatus(record["status"])
    state.outputs = dict(record.get("outputs") or {})
    state.decision = record.get("decision")
    state.attempts = len(record.get("attempts") or [])
    state.inputs = record.get("inputs")
    state.duration = record.get("x-rein-duration-seconds")
    state.unabsorbed = bool(record.get("x-rein-unabsorbed"))
    state.degraded = bool(record.get("x-rein-degraded"))
    state.adopted = True
    state.record = dict(record)
    if state.status is NodeStatus.SUCCEEDED:
        ctx.completions.append((str(record.get("finished_at", "")), inst, nid))


def resolve_inputs(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any]
                   ) -> dict[str, Any]:
    """Inputs resolved once (AGS §9.2): from / template / value, else implicit binding."""
    specs = node.get("inputs") or {}
    scope = inst.scope().with_self({"id": nid, "attempt": 1, "inputs": {}})
    out: dict[str, Any] = {}
    missing: list[str] = []
    for name, spec in specs.items():
        where = f"node {nid} input {name}"
        if "from" in spec:
            got = value(ctx, scope, str(spec["from"]), where)
        elif "template" in spec:
            got = render(str(spec["template"]), scope)
        elif "value" in spec:
            got = spec["value"]
        elif name in inst.params:
            got = inst.params[name]
        else:
            got = (inst.roots.get("context") or {}).get(name)
        if got is None and "default" in spec:
            got = spec["default"]
        if got is None:
            if spec.get("required", True):
                missing.append(name)
            continue
        out[name] = got
    if missing:
        names = ", ".join(missing)
        diagnostic(ctx, "RT033", "error", f"node {nid}: required input(s) {names} resolved "
                   "to nothing", node=inst.key(nid))
        raise InputsMissing(names)
    return out


async def checkpoints(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any],
                      stage: str, attempt: int, *, this: Mapping[str, Any]) -> None:
    """Present the node's human checkpoints at ``stage`` (AGS §15)."""
    entries = node.get("human") or []
    state = inst.states[nid]
    for index, cp in enumerate(entries):
        if not isinstance(cp, Mapping) or cp.get("at") != stage:
            continue
        scope = inst.scope().with_self(this)
        if cp.get("when") and not condition(ctx, scope, str(cp["when"]), f"node {nid} human"):
            continue
        mode = str(cp.get("mode", "approve"))
        cp_id = str(cp.get("id") or f"{stage}_{index}")
        prompt = render(str(cp.get("prompt") or node.get("title", "")), scope)
        if mode == "notify":
            state.record.setdefault("human_events", []).append(
                {"checkpoint_id": cp_id, "at_stage": stage, "mode": mode, "outcome": "notified",
                 "at": ctx.now()})
            ctx.emit("human/notified", {"node": inst.key(nid), "checkpoint": cp_id,
                                        "prompt": prompt})
            continue
        required = bool(cp.get("required", True))
        row = await approvals.ask(
            ctx,
            key=f"checkpoint:{inst.key(nid)}:{cp_id}#{attempt}",
            kind=ApprovalKind.CHECKPOINT,
            request={"node": inst.key(nid), "stage": stage, "mode": mode, "prompt": prompt,
                     "roles": list(cp.get("roles") or []), "checkpoint": cp_id,
                     "attempt": attempt, "outputs": dict(this.get("outputs") or {}),
                     **_timeouts(ctx, cp)},
            shows=this.get("outputs") or {},
            block=required,
        )
        if row.status is ApprovalStatus.PENDING:
            continue  # not required: surfaced, not awaited
        state.record.setdefault("human_events", []).append(
            approvals.human_event(row, stage=stage, mode=mode, checkpoint_id=cp_id))
        if row.status is not ApprovalStatus.ACCEPTED and required:
            raise CheckpointRejected(stage, row.approval_id)


def _timeouts(ctx: RunContext, block: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    timeout = block.get("timeout_seconds", ctx.policy.get("default_human_timeout_seconds"))
    if timeout is not None:
        out["timeout_seconds"] = timeout
    out["on_timeout"] = block.get("on_timeout", ctx.policy.get("on_human_timeout", "hold"))
    return out


human_timeouts = _timeouts
