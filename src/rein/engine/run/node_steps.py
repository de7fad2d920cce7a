"""Steps every node kind shares: resolving inputs once (AGS §9.2, RT033) and presenting
the human checkpoints of ``node.human`` (AGS §15)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.states import ApprovalKind, ApprovalStatus
from rein.engine.events import EventType
from rein.engine.run import approvals
from rein.engine.run.evaluation import condition, diagnostic, value
from rein.engine.run.expressions import render
from rein.engine.run.runtime import NodeAt, RunContext
from rein.engine.run.signals import CheckpointRejected, InputsMissing


def resolve_inputs(here: NodeAt, node: Mapping[str, Any]
                   ) -> dict[str, Any]:
    """Inputs resolved once (AGS §9.2): from / template / value, else implicit binding."""
    specs = node.get("inputs") or {}
    scope = here.inst.scope().with_self({"id": here.nid, "attempt": 1, "inputs": {}})
    out: dict[str, Any] = {}
    missing: list[str] = []
    for name, spec in specs.items():
        where = f"node {here.nid} input {name}"
        if "from" in spec:
            got = value(here.run, scope, str(spec["from"]), where)
        elif "template" in spec:
            got = render(str(spec["template"]), scope)
        elif "value" in spec:
            got = spec["value"]
        elif name in here.inst.params:
            got = here.inst.params[name]
        else:
            got = (here.inst.roots.get("context") or {}).get(name)
        if got is None and "default" in spec:
            got = spec["default"]
        if got is None:
            if spec.get("required", True):
                missing.append(name)
            continue
        out[name] = got
    if missing:
        names = ", ".join(missing)
        diagnostic(here.run, "RT033", "error",
                   f"node {here.nid}: required input(s) {names} resolved "
                   "to nothing", node=here.key)
        raise InputsMissing(names)
    return out


async def checkpoints(here: NodeAt, node: Mapping[str, Any],
                      stage: str, attempt: int, *, this: Mapping[str, Any]) -> None:
    """Present the node's human checkpoints at ``stage`` (AGS §15)."""
    entries = node.get("human") or []
    state = here.state
    for index, cp in enumerate(entries):
        if not isinstance(cp, Mapping) or cp.get("at") != stage:
            continue
        scope = here.inst.scope().with_self(this)
        if cp.get("when") and not condition(here.run, scope, str(cp["when"]),
                                            f"node {here.nid} human"):
            continue
        mode = str(cp.get("mode", "approve"))
        cp_id = str(cp.get("id") or f"{stage}_{index}")
        prompt = render(str(cp.get("prompt") or node.get("title", "")), scope)
        if mode == "notify":
            state.record = state.record.with_human(
                {"checkpoint_id": cp_id, "at_stage": stage, "mode": mode, "outcome": "notified",
                 "at": here.run.now()})
            here.run.emit(EventType.HUMAN_NOTIFIED, {"node": here.key, "checkpoint": cp_id,
                                                     "prompt": prompt})
            continue
        required = bool(cp.get("required", True))
        row = await approvals.ask(
            here.run,
            key=f"checkpoint:{here.key}:{cp_id}#{attempt}",
            kind=ApprovalKind.CHECKPOINT,
            request={"node": here.key, "stage": stage, "mode": mode, "prompt": prompt,
                     "roles": list(cp.get("roles") or []), "checkpoint": cp_id,
                     "attempt": attempt, "outputs": dict(this.get("outputs") or {}),
                     **_timeouts(here.run, cp)},
            shows=this.get("outputs") or {},
            block=required,
        )
        if row.status is ApprovalStatus.PENDING:
            continue  # not required: surfaced, not awaited
        state.record = state.record.with_human(
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
