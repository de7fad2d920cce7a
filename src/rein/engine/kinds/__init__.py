"""The six node kinds of AGS §7. Each sets the node's terminal state on its ``NodeState``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.engine.runtime import RunContext, ScopeInstance


async def run(ctx: RunContext, inst: ScopeInstance, nid: str, node: Mapping[str, Any],
              kind: str) -> None:
    """Dispatch on the node's ``type``."""
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
