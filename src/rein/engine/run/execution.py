"""Executing a run: schedule one scope, finalize it, compensate, persist the outcome.

:func:`execute` runs a top-level run's scope (or continues it: terminal nodes are adopted
from the memo of the state :func:`read_state` reads from the store); :func:`run_child` does
the same for the child run of a subgraph node, sharing its parent's budget and lock. Pauses
end a pass with the run ``waiting`` or ``awaiting_human``; the façade
(:mod:`rein.engine.run.runner`) decides when to continue.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.ids import NodeKey, RunId
from rein.core.states import RunStatus
from rein.engine.events import EventType, append
from rein.engine.run import recovery
from rein.engine.run.evaluation import diagnostic
from rein.engine.run.expressions import ExpressionFailed
from rein.engine.run.finalize import compensate, finalize
from rein.engine.run.graph import scope_model
from rein.engine.run.runtime import ChildSpec, Final, RunContext, RunState, ScopeInstance
from rein.engine.run.scheduler import Scheduler
from rein.engine.run.signals import Paused, RunCancelled
from rein.errors import ReinError
from rein.store.base import RunRow, Store, Transition


async def execute(ctx: RunContext, fragment: Mapping[str, Any], inst: ScopeInstance
                  ) -> RunStatus:
    """Schedule, finalize, compensate and persist one run (top-level or child)."""
    final: Final | None = None
    try:
        if ctx.parent is None:
            _raise_if_cancel_requested(ctx)
        result = await Scheduler(ctx, inst).run()
        if result.paused:
            return _pause(ctx, result.paused)
        final = await finalize(ctx, inst, result, fragment)
    except Paused as pause:
        return _pause(ctx, pause.reason)
    except RunCancelled as exc:
        final = Final(status=RunStatus.CANCELLED)
        diagnostic(ctx, "RUN_CANCELLED", "info", exc.reason)
    except ExpressionFailed as exc:
        diagnostic(ctx, exc.code, "error", exc.message)
        final = Final(status=RunStatus.FAILED)
    if final.status in (RunStatus.FAILED, RunStatus.CANCELLED) and ctx.parent is None:
        try:
            await compensate(ctx)
        except Paused as pause:
            # The run continues later: replay adopts the undos already done and
            # finalizes again, so the final status is written once, after the last undo.
            return _pause(ctx, pause.reason)
    stop = ctx.root().state.budget_stop
    if stop is not None and ctx.parent is None:
        diagnostic(ctx, "RT061", "error", str(stop.get("message")))
    summary: dict[str, Any] = {"outputs": dict(final.outputs)}
    if final.graph_success is not None:
        summary["graph_success"] = dict(final.graph_success)
    if final.human_events:
        summary["human_events"] = [dict(e) for e in final.human_events]
    if ctx.parent is None and final.status is not RunStatus.SUCCEEDED:
        # What a halt, a budget stop, an error or a cancel left in flight ends with the
        # run. (A run succeeds only once every node has ended: nothing to settle.)
        from rein.engine.run.stops import settle_run

        settle_run(ctx, final.status)
    _finish(ctx, final.status, summary)
    return final.status


CANCEL_KEY = "x-rein-cancel"  # in the run's summary: an operator asked to stop the run


def _raise_if_cancel_requested(ctx: RunContext) -> None:
    run = ctx.env.store.get_run(ctx.env.run_id)
    request = (run.summary if run is not None else {}).get(CANCEL_KEY)
    if request:
        raise RunCancelled(by=str(request.get("actor") or "an operator"))


# A run's own events are written as the runner writes its: through the event log's
# ``append``, the engine's one way to write an event.

def _pause(ctx: RunContext, reason: str) -> RunStatus:
    status = RunStatus.AWAITING_HUMAN if reason == "human" else RunStatus.WAITING
    append(ctx.env.store, ctx.env.run_id, EventType.RUN_PAUSED,
           {"status": status.value, "reason": reason}, ctx.now(), Transition(run_status=status))
    return status


def _finish(ctx: RunContext, status: RunStatus, summary: Mapping[str, Any]) -> None:
    change = Transition(run_status=status, finished_at=ctx.now(), summary=dict(summary))
    append(ctx.env.store, ctx.env.run_id, EventType.RUN_FINISHED, {"status": status.value},
           ctx.now(), change)


async def run_child(ctx: RunContext, key: NodeKey, spec: ChildSpec
                    ) -> tuple[Final, ScopeInstance, RunId]:
    """Run (or continue) the child run of subgraph node ``key``; pauses propagate."""
    existing = [r for r in ctx.env.store.child_runs(ctx.env.run_id) if r.parent_node_key == key]
    if existing:
        run = existing[-1]
    else:
        from rein.engine.run.record_order import LAYOUT, layout

        run = RunRow(run_id=RunId(ctx.env.ids.new("run")), graph_id=spec.graph_id,
                     graph_path=spec.path, graph_digest=spec.digest, status=RunStatus.RUNNING,
                     started_at=ctx.now(), parent_run_id=ctx.env.run_id, parent_node_key=key,
                     binding={"params": dict(spec.params),
                              LAYOUT: layout(spec.fragment, spec.document)})
        ctx.env.store.create_run(run, event_type=EventType.RUN_STARTED, payload={
            "graph_id": spec.graph_id, "parent_run_id": ctx.env.run_id, "node": key})
    constraints = spec.document.get("constraints") or {} if spec.document is spec.fragment \
        else {}
    parallel = ctx.env.max_parallel_nodes  # a child never runs wider than its parent
    if constraints:
        parallel = min(int(constraints.get("max_parallel_nodes", parallel)), parallel)
    child = ctx.child(run_id=run.run_id, graph=spec.document, graph_path=spec.path,
                      digest=spec.digest, max_parallel_nodes=parallel,
                      state=read_state(ctx.env.store, run.run_id, ctx.root().env.resume_policy))
    # A child that already ended is adopted below through the memo: every node is terminal.
    inst = ScopeInstance(model=scope_model(spec.fragment), path="", params=dict(spec.params),
                         roots=scope_roots(child, spec.document, dict(spec.params),
                                      dict(spec.context)))
    result = await Scheduler(child, inst).run()
    if result.paused:
        _pause(child, result.paused)
        raise Paused(result.paused, {"child_run_id": run.run_id})
    try:
        final = await finalize(child, inst, result, spec.fragment)
    except Paused:
        _pause(child, "human")
        raise
    if not run.status.terminal:
        summary: dict[str, Any] = {"outputs": dict(final.outputs)}
        if final.graph_success is not None:
            summary["graph_success"] = dict(final.graph_success)
        _finish(child, final.status, summary)
    return final, inst, run.run_id


def scope_roots(ctx: RunContext, data: Mapping[str, Any], params: dict[str, Any],
           context: dict[str, Any]) -> dict[str, Any]:
    graph = {k: data.get(k) for k in ("id", "title", "objective", "version", "description")
             if data.get(k) is not None}
    return {"graph": graph, "params": params, "context": context,
            "attachments": _attachments(ctx, data)}


ATTACHMENT_MAX_BYTES = 1024 * 1024


def _attachments(ctx: RunContext, data: Mapping[str, Any]) -> dict[str, Any]:
    """Attachments by name: inline text, else the text of the workspace file, else the path
    (or uri) as given.

    A graph comes from whoever wrote it: a path that leaves the workspace (absolute, ``..``,
    a symlink out) is never read, so ``path: ~/.ssh/id_rsa`` cannot ship a file to a worker.
    The file is read to a bound, and only when it is a regular file.
    """
    out: dict[str, Any] = {}
    for att in data.get("attachments") or []:
        name = att.get("name")
        if "inline" in att:
            out[name] = att["inline"]
        elif att.get("path"):
            out[name] = _attachment_text(ctx.env.workspace, str(att["path"]))
        else:
            out[name] = att.get("uri")
    return out


def _attachment_text(workspace: Path, path: str) -> str:
    from rein.formats.loader import read_limited
    from rein.tools.paths import ToolFailure, resolve_in_workspace

    try:
        inside = resolve_in_workspace(workspace, path)
        return read_limited(inside.absolute, ATTACHMENT_MAX_BYTES).decode("utf-8")
    except (ToolFailure, ReinError, UnicodeDecodeError):
        return path


def read_state(store: Store, run_id: RunId, resume_policy: str) -> RunState:
    """The state a pass of run ``run_id`` begins with, as the store holds it: the node rows
    the replay may use (terminal ones ``resume_policy`` adopts, and unfinished ones, whose
    closed attempts are kept), the edge resolutions already in the trace, and the run's
    entries of the approval queue by key."""
    state = RunState()
    for row in store.nodes(run_id):
        if not row.status.terminal or recovery.adoptable(row.status, resume_policy):
            state.memo[row.node_key] = row
    state.edges_seen = {
        (str(e.payload.get("scope") or ""), str(e.payload.get("from")),
         str(e.payload.get("to")), str(e.payload.get("kind")))
        for e in store.events(run_id) if e.type == EventType.EDGE_RESOLVED}
    for asked in store.approvals(run_id=run_id):
        state.approvals[asked.key] = asked
    return state


def restore_spending(store: Store, ctx: RunContext) -> None:
    """Usage already spent by this run (and its children) counts against its budgets."""
    from rein.engine.run.record import usage_of

    spent = ctx.env.budget.spent
    total = usage_of(store, ctx.env.run_id, include_children=True, settled_only=True)
    spent.input_tokens = int(total.get("input_tokens") or 0)
    spent.output_tokens = int(total.get("output_tokens") or 0)
    spent.cost_usd = float(total.get("cost_usd") or 0.0)
    # Unknown is not zero: a limit on what was not measured is said to be unenforced.
    spent.unmeasured = any(total.get(k) is None for k in ("input_tokens", "output_tokens",
                                                           "cost_usd"))
    spent.tool_calls = int(total.get("tool_calls", 0))
    spent.node_executions = int(total.get("node_executions", 0))



__all__ = ["CANCEL_KEY", "ChildSpec", "execute", "read_state", "restore_spending", "run_child",
           "scope_roots"]
