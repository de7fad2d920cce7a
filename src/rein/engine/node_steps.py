"""Steps every node kind shares: resolving inputs once (AGS §9.2, RT033) and presenting
the human checkpoints of ``node.human`` (AGS §15)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.states import ApprovalKind, ApprovalStatus
from rein.engine import approvals
from rein.engine.evaluation import condition, diagnostic, value
from rein.engine.events import EventType
from rein.engine.expressions import render
from rein.engine.runtime import RunContext, ScopeInstance
from rein.engine.signals import CheckpointRejected, InputsMissing


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
            ctx.emit(EventType.HUMAN_NOTIFIED, {"node": inst.key(nid), "checkpoint": cp_id,
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
    timeout = block.get("timeout_seconds", ctx.env.policy.get("default_human_timeout_seconds"))
    if timeout is not None:
        out["timeout_seconds"] = timeout
    out["on_timeout"] = block.get("on_timeout", ctx.env.policy.get("on_human_timeout", "hold"))
    return out


human_timeouts = _timeouts

__all__ = ["checkpoints", "human_timeouts", "resolve_inputs"]
