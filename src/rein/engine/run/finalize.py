"""FINALIZE (AGS §17.8, §5.7): bind graph outputs, evaluate graph success, compensate,
and decide the final status.

Readings (docs/ambiguities.md): a global-budget stop ends ``partial`` when some required
output is bound, else ``failed`` (§5.4, RT061); an unabsorbed node failure ends the run
``failed`` under every ``on_node_failure`` policy (the policy decides what else runs, not
whether a failure counts); ``partial`` is for unbound required outputs without a failure,
degraded nodes and budget stops.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus
from rein.engine.events import EventType
from rein.engine.run import approvals
from rein.engine.run.criteria.evaluate import evaluate_success
from rein.engine.run.criteria.model import CriterionContext, HumanAnswer, HumanRequest
from rein.engine.run.evaluation import diagnostic, value
from rein.engine.run.runtime import Final, NodeAt, RunContext, ScopeInstance
from rein.engine.run.scheduler import ScopeResult
from rein.engine.run.signals import Paused
from rein.errors import StoreError


async def finalize(ctx: RunContext, inst: ScopeInstance, result: ScopeResult,
                   fragment: Mapping[str, Any]) -> Final:
    """Outputs, graph success and status. May pause (a ``human`` graph criterion)."""
    specs: Mapping[str, Any] = fragment.get("outputs") or {}
    scope = inst.scope()
    outputs: dict[str, Any] = {}
    unbound: list[str] = []
    for name, spec in specs.items():
        got = value(ctx, scope, str(spec.get("from", "null")), f"graph output {name}")
        if got is None:
            if spec.get("required", True):
                unbound.append(name)
            continue
        outputs[name] = got
    for name in unbound:
        diagnostic(ctx, "RT041", "error", f"required graph output {name!r} is unbound")
    if ctx.root().state.budget_stop is not None and ctx.parent is None:
        bound_required = any(n in outputs for n, s in specs.items() if s.get("required", True))
        status = RunStatus.PARTIAL if bound_required else RunStatus.FAILED
        return Final(status=status, outputs=outputs)
    if result.halted:
        return Final(status=RunStatus.FAILED, outputs=outputs)
    if result.failed:
        return Final(status=RunStatus.FAILED, outputs=outputs)
    success_record = None
    events: list[Mapping[str, Any]] = []
    block = fragment.get("success")
    if isinstance(block, Mapping):
        outcome = await evaluate_success(block, _graph_context(ctx, inst, outputs, events))
        success_record = outcome.to_record()
        if not outcome.passed:
            return Final(status=RunStatus.FAILED, outputs=outputs,
                         graph_success=success_record, human_events=tuple(events))
    if unbound or result.degraded:
        status = RunStatus.PARTIAL
    else:
        status = RunStatus.SUCCEEDED
    return Final(status=status, outputs=outputs, graph_success=success_record,
                 human_events=tuple(events))


def _graph_context(ctx: RunContext, inst: ScopeInstance, outputs: Mapping[str, Any],
                   events: list[Mapping[str, Any]]) -> CriterionContext:
    scope = inst.scope()
    scope = type(scope)(roots=scope.roots, nodes=scope.nodes, statuses=scope.statuses,
                        extra={**scope.extra, "outputs": dict(outputs)})

    async def ask_human(req: HumanRequest) -> HumanAnswer:
        row = await approvals.ask(
            ctx, key=f"criterion:graph:{req.criterion_id}", kind=ApprovalKind.CRITERION,
            request={"node": None, "criterion": req.criterion_id, "prompt": req.prompt,
                     "description": req.description, "roles": list(req.roles),
                     "digest": req.digest},
            shows=dict(outputs))
        events.append(approvals.human_event(row, stage="graph_success", mode="approve",
                                            checkpoint_id=req.criterion_id))
        answer = row.answer or {}
        return HumanAnswer(approved=row.status is ApprovalStatus.ACCEPTED,
                           note=answer.get("note"), reviewer=answer.get("actor"))

    return CriterionContext(
        workspace=ctx.env.workspace, node_id="graph", attempt=1, outputs=dict(outputs),
        output_specs=dict(inst.model.fragment.get("outputs") or {}), scope=scope,
        secret_values=ctx.env.secret_values, ask_human=ask_human, checkers=ctx.env.checkers,
        clock=ctx.env.clock.now,
    )


async def compensate(ctx: RunContext) -> None:
    """Run ``failure.compensation`` nodes of succeeded nodes, newest completion first."""
    done = sorted(ctx.state.completions, key=lambda c: c[0], reverse=True)
    for _, inst, nid in done:
        target = inst.model.specs[nid].failure.compensation
        if not target or target not in inst.model.nodes:
            continue
        view = inst.stand_in(str(target), nid)
        ctx.emit(EventType.NODE_COMPENSATING, {"node": inst.key(nid), "by": str(target)})
        try:
            await ctx.env.execute_node(NodeAt(ctx, view, str(target)))
        except Paused:
            raise  # an undo waiting for a person or a worker is waited for, not an error
        except StoreError:
            raise  # the store failed: the run is interrupted, not an undo that went wrong
        except Exception as exc:  # noqa: BLE001 - one failed undo must not stop the others
            diagnostic(ctx, "RUN000", "error", f"compensation {target} for {nid} could not "
                       f"run: {exc}", node=inst.key(nid))
            continue
        if view.states[str(target)].status is not NodeStatus.SUCCEEDED:
            diagnostic(ctx, "RUN000", "error", f"compensation {target} for {nid} ended "
                       f"{view.states[str(target)].status.value}", node=inst.key(nid))
