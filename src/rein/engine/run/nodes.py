"""Executing one node (AGS §17.7): adopt it from the store, or run its kind and persist it.

Common to every kind: the memo check (a node already terminal in the store is adopted, not
re-run), the dispatch on the node's type through the registry of the six kinds of AGS §7
(:data:`KINDS`: kind name → the coroutine that runs it, each in :mod:`rein.engine.run.kinds`),
and the final transition written with its event. Each runner takes the node and its spec
and returns the :class:`~rein.engine.run.outcome.NodeOutcome` it reached (or raises a signal);
:func:`execute_node` applies it. A kind reaches the engine that runs it (a stand-in node, a
child run) through the callables of the run's :class:`~rein.engine.run.runtime.RunEnv`, never
by importing it. The steps a kind takes itself (inputs, human checkpoints) are in
:mod:`rein.engine.run.node_steps`.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.states import AttemptStatus, NodeStatus, restore, transition
from rein.engine.events import EventType
from rein.engine.run.criteria.evaluate import evaluate_success
from rein.engine.run.evaluation import diagnostic
from rein.engine.run.kinds import ladder
from rein.engine.run.kinds.attempt import criteria_reason, status_for
from rein.engine.run.kinds.attempt_end import AttemptOutcome, NodeRecord
from rein.engine.run.kinds.criteria_context import criterion_context
from rein.engine.run.kinds.gate import run_gate
from rein.engine.run.kinds.task import run_decision, run_task
from rein.engine.run.outcome import NodeOutcome
from rein.engine.run.permissions import check_requirements
from rein.engine.run.runtime import NodeAt, NodeState
from rein.engine.run.signals import Paused
from rein.formats.ags.spec import NodeSpec

KindRunner = Callable[[NodeAt, NodeSpec], Awaitable[NodeOutcome]]

# The kinds imported when a node of theirs first runs: (module, runner). A driver turn that
# advances a task to a gate has no use for them (tests/cli/test_import_budgets.py).
_LATER_KINDS = {"loop": ("rein.engine.run.kinds.loop", "run_loop"),
                "map": ("rein.engine.run.kinds.map", "run_map"),
                "subgraph": ("rein.engine.run.kinds.subgraph", "run_subgraph")}


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


KINDS: MutableMapping[str, KindRunner] = _Kinds(task=run_task, decision=run_decision,
                                                gate=run_gate)

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


async def execute_node(here: NodeAt) -> None:
    """Run node ``here.nid`` of ``here.inst`` to a terminal state (or a pause) and persist it."""
    state = here.state
    key = here.key
    known = here.run.state.memo.get(key)
    if known is not None and known.status.terminal and not known.record.get("x-rein-redacted"):
        _adopt(here, known.record)
        return
    if known is not None and not known.status.terminal:
        # Paused mid-retries in an earlier process: keep the attempts that already ended,
        # so that resuming adopts them instead of running and judging them again.
        stored = NodeRecord.from_record(known.record)
        state.record = NodeRecord(
            started_at=stored.started_at or here.run.now(),
            attempts=tuple(a for a in stored.attempts
                           if a.end is not None and a.end.status is not AttemptStatus.SUCCEEDED))
    node = here.node
    kind = here.inst.model.node_type(here.nid)
    started = here.env.clock.monotonic()
    transition(state, NodeStatus.RUNNING)
    at = here.run.now()
    if state.record.started_at is None:
        state.record = state.record.replace(started_at=at)
    # Held: nothing is done on the node's account before its next write (an attempt
    # starting, a question asked, its end), which commits both; lost in a crash, the node
    # simply had not started.
    here.save(EventType.NODE_STARTED, {"type": kind, "title": node.get("title")},
              hold=True, at=at)
    # Nothing is written when the node's task is cancelled or an exception passes through:
    # that is an interrupt (Ctrl-C, a server shutting down, a store error in a sibling),
    # and the node stays in flight in the store, exactly as after a kill, so that resuming
    # runs it again. A cancel the engine means (a halt, fail_fast, an operator) is recorded
    # by whoever decided it (rein.engine.run.stops).
    try:
        outcome = await run(here, here.spec)
    except Paused as pause:
        transition(state, NodeStatus.AWAITING_HUMAN if pause.reason == "human"
                   else NodeStatus.RUNNING, node=key)
        here.save(EventType.NODE_WAITING, {"reason": pause.reason, **pause.detail})
        raise
    _apply(state, outcome, node=key)
    state.duration = round(here.env.clock.monotonic() - started, 6)
    at = here.run.now()
    state.record = state.record.replace(finished_at=at, duration=state.duration)
    if state.status is NodeStatus.SUCCEEDED and _undone(here):
        here.run.state.completions.append((at, here.inst, here.nid))
    # Held: what the node's end sets off (the next map item or a lone successor starting,
    # the scope's edges) writes next, before anything awaits, and commits it; an empty
    # scheduling step keeps it held. A step that writes commits it first, on its own, and
    # the loop's next turn at the latest (rein.engine.events.append), so no worker, person
    # or other process can learn of the end, or of what follows from it, before it is
    # committed: a crash can only take it with everything that came after it.
    here.save(EventType.NODE_FINISHED, _finish_payload(state.outputs, node, state),
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
    state.record = state.record.noting(outcome.record)


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


def _adopt(here: NodeAt, record: Mapping[str, Any]) -> None:
    """Take a node's terminal state from the store instead of running it again."""
    state = here.state
    restore(state, NodeStatus(record["status"]), node=here.key)
    state.adopt(record)
    if state.status is NodeStatus.SUCCEEDED and _undone(here):
        here.run.state.completions.append((str(record.get("finished_at", "")), here.inst,
                                           here.nid))


def _undone(here: NodeAt) -> bool:
    """Whether a node names a compensation to run if the run fails: only those are kept
    in the run's completions, which would otherwise hold every scope instance (every map
    item's) until the run ends."""
    return bool(here.inst.model.specs[here.nid].failure.compensation)
