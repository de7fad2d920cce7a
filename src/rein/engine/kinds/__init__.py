"""The six node kinds of AGS §7. Each sets the node's terminal state on its ``NodeState``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.engine.runtime import RunContext, ScopeInstance


async def run(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any],
              kind: str) -> None:
    """Dispatch on the node's ``type``."""
    if kind in ("task", "decision") and await _refused(ctx, inst, nid, node):
        return
    match kind:
        case "task":
            from rein.engine.kinds.task import run_task

            await run_task(ctx, inst, nid, node)
        case "decision":
            from rein.engine.kinds.task import run_decision

            await run_decision(ctx, inst, nid, node)
        case "gate":
            from rein.engine.kinds.gate import run_gate

            await run_gate(ctx, inst, nid, node)
        case "loop":
            from rein.engine.kinds.loop import run_loop

            await run_loop(ctx, inst, nid, node)
        case "map":
            from rein.engine.kinds.map import run_map

            await run_map(ctx, inst, nid, node)
        case "subgraph":
            from rein.engine.kinds.subgraph import run_subgraph

            await run_subgraph(ctx, inst, nid, node)
        case _:
            raise ValueError(f"unknown node type {kind!r}")  # validation refuses it earlier


async def _refused(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any]
                   ) -> bool:
    """Requirements this harness cannot or may not grant: ``blocked`` before any worker call
    (RT012 tools and MCP servers, PERM002 permissions outside rein's policy)."""
    from rein.core.failures import FailureClass
    from rein.engine.kinds import ladder
    from rein.engine.permissions import check_requirements
    from rein.engine.scheduler import diagnostic

    refusal = check_requirements(nid, node, ctx.harness_policy, ctx.workers)
    if refusal is None:
        return False
    diagnostic(ctx, refusal.code, "error", refusal.message, node=inst.key(nid))
    inst.states[nid].record["x-rein-blocked"] = {"code": refusal.code,
                                                 "message": refusal.message}
    await ladder.exhausted(ctx, inst, nid, node, None, failure=FailureClass.PERMISSION_DENIED,
                           blocked=True)
    return True
