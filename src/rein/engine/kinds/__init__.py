"""The six node kinds of AGS §7, as a registry: kind name → the coroutine that runs it.

Each runner takes a running node's spec and returns the :class:`~rein.engine.outcome.NodeOutcome`
it reached (or raises a signal); :func:`rein.engine.nodes.execute_node` applies it. A kind reaches the engine that runs it (a stand-in node, a child run)
through the callables on :class:`~rein.engine.runtime.RunContext`, never by importing it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from rein.core.failures import FailureClass
from rein.core.states import NodeStatus
from rein.engine.criteria.evaluate import evaluate_success
from rein.engine.evaluation import diagnostic
from rein.engine.kinds import ladder
from rein.engine.kinds.attempt import (
    AttemptOutcome,
    criteria_reason,
    status_for,
)
from rein.engine.kinds.criteria_context import criterion_context
from rein.engine.kinds.gate import run_gate
from rein.engine.kinds.loop import run_loop
from rein.engine.kinds.map import run_map
from rein.engine.kinds.subgraph import run_subgraph
from rein.engine.kinds.task import run_decision, run_task
from rein.engine.outcome import NodeOutcome
from rein.engine.permissions import check_requirements
from rein.engine.runtime import NodeAt
from rein.formats.ags.spec import NodeSpec

KindRunner = Callable[[NodeAt, NodeSpec], Awaitable[NodeOutcome]]

KINDS: Mapping[str, KindRunner] = {
    "task": run_task,
    "decision": run_decision,
    "gate": run_gate,
    "loop": run_loop,
    "map": run_map,
    "subgraph": run_subgraph,
}

# Kinds that call a worker: their requirements are checked before anything is spent.
_GUARDED = frozenset({"task", "decision"})


async def run(here: NodeAt, spec: NodeSpec
              ) -> NodeOutcome:
    """Dispatch on the node's ``type``."""
    runner = KINDS.get(spec.type)
    if runner is None:
        raise ValueError(f"unknown node type {spec.type!r}")  # validation refuses it earlier
    if spec.type in _GUARDED:
        refused = await _refused(here, spec)
        if refused is not None:
            return refused
    outcome = await runner(here, spec)
    if spec.type in _GUARDED or outcome.status is not NodeStatus.SUCCEEDED or \
            not isinstance(spec.raw.get("success"), Mapping):
        return outcome
    return await _checked(here, spec, outcome)


async def _checked(here: NodeAt, spec: NodeSpec,
                   outcome: NodeOutcome) -> NodeOutcome:
    """A gate, loop, map or subgraph node that reached its end evaluates its ``success``
    block on what it produced (§17.7 step 9; tasks and decisions do it per attempt). A
    failed check is ``criteria_failed`` and goes to the ladder; the whole node is not run
    again (there is no attempt to retry), and its results are kept as ``x-rein-success``."""
    outputs = dict(outcome.outputs or {})
    success = await evaluate_success(spec.raw["success"], criterion_context(
        here, spec.raw, 1, outputs))
    shown = {"x-rein-success": success.to_record()} if success.results else {}
    if success.passed:
        return outcome.noting(**shown)
    failure = FailureClass.TIMEOUT if success.timed_out else FailureClass.CRITERIA_FAILED
    last = AttemptOutcome(status=status_for(failure), failure=failure, outputs=outputs,
                          success=success, message=criteria_reason(success, spec.success))
    ended = await ladder.exhausted(here, spec, last, failure=failure,
                                   produced=outputs)
    return ended.noting(**shown)


async def _refused(here: NodeAt, spec: NodeSpec
                   ) -> NodeOutcome | None:
    """Requirements this harness cannot or may not grant: ``blocked`` before any worker call
    (RT012 tools and MCP servers, PERM002 permissions outside rein's policy)."""
    refusal = check_requirements(spec, here.env.harness_policy, here.env.workers)
    if refusal is None:
        return None
    diagnostic(here.run, refusal.code, "error", refusal.message, node=here.key)
    outcome = await ladder.exhausted(here, spec, None,
                                     failure=FailureClass.PERMISSION_DENIED, blocked=True)
    return outcome.noting(**{"x-rein-blocked": {"code": refusal.code,
                                                "message": refusal.message}})


__all__ = ["KINDS", "KindRunner", "run"]
