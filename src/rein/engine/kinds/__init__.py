"""The six node kinds of AGS §7, as a registry: kind name → the coroutine that runs it.

The loop, map and subgraph kinds are imported when a node of theirs first runs: a driver
turn that advances a task to a gate has no use for them
(``tests/cli/test_import_budgets.py``).

Each runner takes a running node's spec and returns the :class:`~rein.engine.outcome.NodeOutcome`
it reached (or raises a signal); :func:`rein.engine.nodes.execute_node` applies it. A kind reaches the engine that runs it (a stand-in node, a child run)
through the callables on :class:`~rein.engine.runtime.RunContext`, never by importing it.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping

from rein.core.failures import FailureClass
from rein.core.states import NodeStatus
from rein.engine.criteria.evaluate import evaluate_success
from rein.engine.evaluation import diagnostic
from rein.engine.kinds import ladder
from rein.engine.kinds.attempt import (
    AttemptOutcome,
    criteria_reason,
    failed_criteria,
    status_for,
)
from rein.engine.kinds.criteria_context import criterion_context
from rein.engine.kinds.gate import run_gate
from rein.engine.kinds.task import run_decision, run_task
from rein.engine.outcome import NodeOutcome
from rein.engine.permissions import check_requirements
from rein.engine.runtime import RunContext, ScopeInstance
from rein.formats.ags.spec import NodeSpec

KindRunner = Callable[[RunContext, ScopeInstance, str, NodeSpec], Awaitable[NodeOutcome]]

# The kinds imported when a node of theirs first runs: (module, runner).
_LATER_KINDS = {"loop": ("rein.engine.kinds.loop", "run_loop"),
                "map": ("rein.engine.kinds.map", "run_map"),
                "subgraph": ("rein.engine.kinds.subgraph", "run_subgraph")}


class _Kinds(MutableMapping[str, KindRunner]):
    """Kind name → runner; the kinds of ``_LATER_KINDS`` are imported on first use."""

    def __init__(self, **now: KindRunner) -> None:
        self._now = now

    def __getitem__(self, kind: str) -> KindRunner:
        if kind not in self._now and kind in _LATER_KINDS:
            module, name = _LATER_KINDS[kind]
            self._now[kind] = getattr(importlib.import_module(module), name)
        return self._now[kind]

    def __setitem__(self, kind: str, value: KindRunner) -> None:  # a stand-in, in tests
        self._now[kind] = value

    def __delitem__(self, kind: str) -> None:
        del self._now[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._now, *_LATER_KINDS]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*self._now, *_LATER_KINDS]))


KINDS: MutableMapping[str, KindRunner] = _Kinds(task=run_task, decision=run_decision, gate=run_gate)

# Kinds that call a worker: their requirements are checked before anything is spent.
_GUARDED = frozenset({"task", "decision"})


async def run(ctx: RunContext, inst: ScopeInstance, nid: str, spec: NodeSpec
              ) -> NodeOutcome:
    """Dispatch on the node's ``type``."""
    runner = KINDS.get(spec.type)
    if runner is None:
        raise ValueError(f"unknown node type {spec.type!r}")  # validation refuses it earlier
    if spec.type in _GUARDED:
        refused = await _refused(ctx, inst, nid, spec)
        if refused is not None:
            return refused
    outcome = await runner(ctx, inst, nid, spec)
    if spec.type in _GUARDED or outcome.status is not NodeStatus.SUCCEEDED or \
            not isinstance(spec.raw.get("success"), Mapping):
        return outcome
    return await _checked(ctx, inst, nid, spec, outcome)


async def _checked(ctx: RunContext, inst: ScopeInstance, nid: str, spec: NodeSpec,
                   outcome: NodeOutcome) -> NodeOutcome:
    """A gate, loop, map or subgraph node that reached its end evaluates its ``success``
    block on what it produced (§17.7 step 9; tasks and decisions do it per attempt). A
    failed check is ``criteria_failed`` and goes to the ladder; the whole node is not run
    again (there is no attempt to retry), and its results are kept as ``x-rein-success``."""
    outputs = dict(outcome.outputs or {})
    success = await evaluate_success(spec.raw["success"], criterion_context(
        ctx, inst, nid, spec.raw, 1, outputs))
    shown = {"x-rein-success": success.to_record()} if success.results else {}
    if success.passed:
        return outcome.noting(**shown)
    failure = FailureClass.TIMEOUT if success.timed_out else FailureClass.CRITERIA_FAILED
    told = failed_criteria(success.to_record()["results"], spec.success)
    last = AttemptOutcome(status=status_for(failure), failure=failure, outputs=outputs,
                          success=success, message=criteria_reason(told))
    ended = await ladder.exhausted(ctx, inst, nid, spec, last, failure=failure,
                                   produced=outputs)
    return ended.noting(**shown)


async def _refused(ctx: RunContext, inst: ScopeInstance, nid: str, spec: NodeSpec
                   ) -> NodeOutcome | None:
    """Requirements this harness cannot or may not grant: ``blocked`` before any worker call
    (RT012 tools and MCP servers, PERM002 permissions outside rein's policy)."""
    refusal = check_requirements(spec, ctx.harness_policy, ctx.workers)
    if refusal is None:
        return None
    diagnostic(ctx, refusal.code, "error", refusal.message, node=inst.key(nid))
    outcome = await ladder.exhausted(ctx, inst, nid, spec, None,
                                     failure=FailureClass.PERMISSION_DENIED, blocked=True)
    return outcome.noting(**{"x-rein-blocked": {"code": refusal.code,
                                                "message": refusal.message}})


__all__ = ["KINDS", "KindRunner", "run"]
