"""The engine's façade: create a run of an approved graph, continue it, cancel it.

:class:`Engine` is what the Harness service (:mod:`rein.engine.service`) calls; every
method that advances a run is async, so a server with its own event loop can start and
continue runs. Continuing is replay with memory: terminal nodes are adopted from the store,
everything else is scheduled again (:mod:`rein.engine.run.execution`), and answers given in the
approval queue are found by key. Preparing a graph is :mod:`rein.engine.run.prepare`.

The engine reads no file of configuration: the merged ``rein.toml`` comes in as ``config``
(built once by the composition root), so what a run is held to is what the caller loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.config import Config
from rein.core.collector import advancing
from rein.core.frozen import Record, field
from rein.core.ids import ApprovalId, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, RunStatus
from rein.core.time import iso
from rein.engine.events import EventLog, EventType, append
from rein.engine.run import recovery
from rein.engine.run.budget import BudgetTracker, Limits
from rein.engine.run.clock import Clock, IdGenerator, RandomIds, SystemClock
from rein.engine.run.execution import (
    CANCEL_KEY,
    execute,
    read_state,
    restore_spending,
    run_child,
    scope_roots,
)
from rein.engine.run.graph import scope_model
from rein.engine.run.nodes import execute_node
from rein.engine.run.outcome import RunOutcome
from rein.engine.run.prepare import (
    Prepared,
    PrepareFailed,
    binding_override,
    check_approved,
    current_binding,
    prepare,
    secrets_from_env,
)
from rein.engine.run.routing import Router
from rein.engine.run.runtime import Listener, RunContext, RunEnv, ScopeInstance
from rein.errors import Location, Refused, ReinError, RunError
from rein.profiles.policy import Policy
from rein.store import workspace_id
from rein.store.base import ApprovalRow, RunRow, Store, Transition
from rein.store.lineage import family, top_run
from rein.tools.process import GROUP_WATCH
from rein.workers.base import Worker

if TYPE_CHECKING:
    from rein.engine.run.signed import Signers

#: Signs a run's approval: the message in, the armored signature out (the person's key).
Sign = Callable[[bytes], str]

#: The settings of an engine built without any: the built-in defaults, as with no
#: ``rein.toml`` at all (the strictest policy), never a file read behind the caller's back.
NO_CONFIG = Config(data={}, sources={})



class Engine(Record):
    """Starts and continues runs in one workspace."""

    workspace: Path
    store: Store
    workers: tuple[Worker, ...] = ()
    router: Router = field(default_factory=lambda: Router(routes={}))
    clock: Clock = field(default_factory=SystemClock)
    ids: IdGenerator = field(default_factory=RandomIds)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    listeners: list[Listener] = field(default_factory=list)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    checkers: Mapping[str, Any] | None = None
    # The merged rein.toml, read once by the composition root. Its [policy] is the ceiling
    # node requirements are checked against; without it, the defaults (fail closed).
    config: Config = NO_CONFIG
    policy: Policy | None = None  # overrides config's [policy] (tests narrow it directly)
    placed: tuple[Worker, ...] | None = None  # the workers as [executor] places them
    # Where approvals are signed ([approver] allowed_signers): every answer and every run's
    # approval is checked against them before it is acted on (rein.engine.run.signed).
    signers: Signers | None = None

    def __post_init__(self) -> None:
        # The store redacts on every write: teach it this engine's environment (which tests
        # inject) and the provider keys rein.toml names, before the first event.
        from rein.formats.redaction import known_secrets
        from rein.store.open import key_variables_of

        self.store.know(known_secrets(self.env, key_variables_of(self.config)))
        # Every event this store commits reaches the listeners once, after its commit: the
        # engine's own, and those a worker or an approval writes through the same store.
        EventLog.of(self.store).listen(self._publish)
        if self.signers is None and (self.config.data.get("approver") or {}).get(
                "allowed_signers"):
            from rein.engine.run.signed import signers_of

            self.signers = signers_of(self.config.data, self.workspace)

    async def start(self, prepared: Prepared, *, approved: str, actor: str = "cli",
                    given: Mapping[str, Any] | None = None, run_id: RunId | None = None,
                    approval: Mapping[str, Any] | None = None) -> RunOutcome:
        """Create a run of an approved graph and advance it to its end or first wait
        (``given``: how the approval was given, kept with it). Where approvals are signed,
        ``approval`` is what the binding keeps of the person's approval (the signature over
        the binding of ``run_id``, or the signed approval it was started under), checked
        before anything is written (APPROVAL005)."""
        from rein.engine.run.graph_cache import load_graph

        check_approved(prepared, approved)
        # The files as they are now, before anything is written: read once, and this very
        # data is what the run executes (no second read, so nothing can change in between).
        try:
            data = load_graph(prepared.path, self.workspace, approved=prepared.digest,
                              limits=self.config.limits)
            unchanged = current_binding(prepared.path, prepared.params, data=data,
                                        limits=self.config.limits) == prepared.binding()
        except ReinError:
            unchanged = False
        if not unchanged:
            raise Refused(f"{prepared.path} changed since its digest {prepared.digest} was "
                          "approved", code="RT053", location=Location(file=prepared.path),
                          hint="review the plan again and approve the digest rein prints")
        self._attach_telemetry()  # before the first event, so the run's span starts with it
        run_id = run_id or RunId(self.ids.new("run"))
        now = iso(self.clock.now())
        from rein.engine.run.record_order import LAYOUT, layout

        binding = {**prepared.binding(), "approved_digest": approved, "approved_by": actor,
                   **(approval or {}),
                   LAYOUT: layout(data)}  # not approved: the order the record lists nodes in
        run = RunRow(run_id=run_id, graph_id=str(prepared.data.get("id")),
                     # One lookup as a run starts, on the loop like the commit below it.
                     graph_path=str(Path(prepared.path).resolve()),  # noqa: ASYNC240
                     graph_digest=prepared.digest, status=RunStatus.RUNNING, started_at=now,
                     binding=binding, workspace=workspace_id.here(self.workspace, create=True))
        if self.signers is not None:  # a person's signature approves it, or nothing starts
            from rein.engine.run.signed import refused_run, run_problem

            why = run_problem(self.store, run, self.signers, workspace=self.workspace,
                              now=self.clock.now(), data=data)
            if why is not None:
                raise refused_run(run, why)
        row = ApprovalRow(approval_id=ApprovalId(self.ids.new("apv")), run_id=run_id,
                          key=f"graph:{prepared.digest}", kind=ApprovalKind.GRAPH,
                          status=ApprovalStatus.ACCEPTED, digest=prepared.digest,
                          request={"binding": prepared.binding()}, created_at=now,
                          answer={"actor": actor, **({"given": dict(given)} if given else {})},
                          answered_at=now)
        with self.store.atomic():  # a run never exists without the approval it ran under
            self.store.create_run(run, event_type=EventType.RUN_STARTED, payload={
                "graph_id": run.graph_id, "digest": prepared.digest, "params": _public_params(
                    prepared.data, prepared.params)})
            append(self.store, run_id, EventType.APPROVAL_ANSWERED, {
                "approval_id": row.approval_id, "kind": "graph", "status": "accepted",
                "digest": prepared.digest}, now, Transition(approval=row))
        return await self.proceed(run_id, fresh=True, checked=data)

    def now(self) -> str:
        return iso(self.clock.now())

    def placed_workers(self) -> tuple[Worker, ...]:
        """The workers bound to where ``[executor]`` runs attempts (in process by default;
        the DBOS executor is imported only when chosen)."""
        if self.placed is None:
            from rein.executors import executor_for

            self.placed = executor_for(self.config, self.env, self.store).place(self.workers)
        return self.placed

    def harness_policy(self) -> Policy:
        """The policy runs of this engine are held to (``[policy]`` of its ``config``)."""
        if self.policy is None:
            self.policy = Policy.from_config(self.config)
        return self.policy

    def _publish(self, event: Any) -> None:
        for listener in list(self.listeners):
            listener(event)

    def _attach_telemetry(self) -> None:
        """Live OpenTelemetry export, when ``rein.toml`` or the environment asks for it."""
        from rein.telemetry.live import attach

        attach(self)

    def _flush_listeners(self) -> None:
        """The end of an advance: listeners that buffer (live telemetry) send what they hold."""
        for listener in self.listeners:
            flush = getattr(listener, "flush", None)
            if callable(flush):
                flush()

    def check_binding(self, run: RunRow, *, force: bool,
                      data: Mapping[str, Any] | None = None,
                      sign: Sign | None = None) -> dict[str, Any] | None:
        """RT053: the graph, params or child documents changed since the approval; and,
        where approvals are signed, APPROVAL005 when the run's approval does not verify
        (:func:`rein.engine.run.signed.held`: with ``force``, ``sign`` signs it anew).

        The one check every continuation goes through (:meth:`proceed` calls it under
        the run lock; surfaces may call it first to refuse before recording anything).
        ``data``: the graph as this process is about to run it, so that what is checked is
        what runs. Returns the override to record when ``force`` lets a change through.
        Without ``data`` the file is read through the graph cache, which hands out only the
        approved data for the very bytes on disk, so the verdict is the one a parse gives.
        """
        if data is None:
            from rein.engine.run.graph_cache import load_graph

            with contextlib.suppress(ReinError):  # a file that no longer loads: said below
                data = load_graph(run.graph_path, self.workspace,
                                  approved=run.binding.get("graph_digest"),
                                  limits=self.config.limits)
        override = binding_override(run, force=force, data=data, now=self.now,
                                    limits=self.config.limits)
        if self.signers is None:
            return override
        from rein.engine.run.signed import held

        return held(self.store, run, override, self.signers, workspace=self.workspace,
                    now=self.clock.now(), data=data, force=force, sign=sign,
                    actor=self.config.approver.id)

    async def cancel(self, run_id: str, *, actor: str, note: str | None = None,
                     force: bool = False) -> RunOutcome:
        """Stop a run that has not ended: compensation runs and the run ends ``cancelled``.

        Compensation is node work of the graph, so a changed graph is refused (RT053) here
        too, before the request is recorded, unless ``force``.
        """
        run = self.store.get_run(run_id)
        if run is None:
            raise RunError(f"no run {run_id!r}", code="RUN404",
                           hint="list runs with `rein runs list`")
        if run.parent_run_id is not None:
            raise Refused(f"{run_id} is a subgraph's child run", code="RUN_CHILD",
                          hint=f"cancel its top-level run ({run.parent_run_id} or above)")
        # Compensation is node work: it runs in the run's own workspace, never another.
        workspace_id.refuse_elsewhere(run, self.workspace, doing="cancel it")
        with self.store.lock_run(run.run_id):
            run = self.store.get_run(run.run_id) or run
            if run.status.terminal:
                raise Refused(f"run {run_id} already ended ({run.status.value})",
                              code="RUN_ENDED", hint="nothing to cancel")
            self.check_binding(run, force=force)  # before anything is recorded
            request = {"actor": actor, **({"note": note} if note else {})}
            append(self.store, run.run_id, EventType.RUN_CANCEL_REQUESTED, request, self.now(),
                   Transition(summary={**run.summary, CANCEL_KEY: request}))
            return await self.proceed(run.run_id, force=force)

    async def resume(self, run_id: str, *, force: bool = False,
                     sign: Sign | None = None,
                     forced_by: Mapping[str, Any] | None = None) -> RunOutcome:
        """``rein resume``: continue a paused or interrupted run, or reopen a failed one when
        its ``policy.resume`` is ``resume_failed`` or ``restart`` (``sign``: signs a forced
        continuation's approval where approvals are signed; ``forced_by``: how the person
        gave the force, kept in the ``run/forced`` event)."""
        return await self.proceed(run_id, reopen=True, force=force, sign=sign,
                                  forced_by=forced_by)

    async def proceed(self, run_id: str, *, fresh: bool = False,
                      reopen: bool = False, force: bool = False,
                      checked: Mapping[str, Any] | None = None,
                      sign: Sign | None = None,
                      forced_by: Mapping[str, Any] | None = None) -> RunOutcome:
        """Advance a run while holding its lock (``RUN_LOCKED`` when another process does).

        ``fresh``: the run was just created here. Otherwise a run found ``running`` was
        interrupted and is recovered first (:mod:`rein.engine.run.recovery`). ``reopen``: a
        failed or partial run runs again as its ``policy.resume`` says. Every continuation
        is held to the approved binding (RT053, :meth:`check_binding`); ``force`` lets a
        change through and records it. ``checked``: a fresh run's graph, just read and held
        to the binding it was created under, before the run existed (:meth:`start`).
        """
        run = self.store.get_run(run_id)
        if run is None:
            raise RunError(f"no run {run_id!r}", code="RUN404",
                           hint="list runs with `rein runs list`")
        run = top_run(self.store, run.run_id) or run  # a child continues through its top run
        # Its checks run in this workspace: never another workspace's run (RUN010).
        workspace_id.refuse_elsewhere(run, self.workspace, doing="advance it")
        self._attach_telemetry()
        with self.store.lock_run(run.run_id):
            token = GROUP_WATCH.set(recovery.GroupRecorder(self.store, run.run_id, self.now))
            try:
                return await self._advance(run.run_id, fresh=fresh, reopen=reopen,
                                           force=force, checked=checked if fresh else None,
                                           sign=sign, forced_by=forced_by)
            finally:
                GROUP_WATCH.reset(token)
                self._flush_listeners()

    async def _advance(self, run_id: RunId, *, fresh: bool, reopen: bool,
                       force: bool, checked: Mapping[str, Any] | None = None,
                       sign: Sign | None = None,
                       forced_by: Mapping[str, Any] | None = None) -> RunOutcome:
        from rein.engine.run.graph_cache import load_graph

        run = self.store.get_run(run_id)  # again: it may have moved before the lock was ours
        assert run is not None
        if run.status.terminal and not reopen:
            return RunOutcome(run_id=run.run_id, status=run.status, digest=run.graph_digest)
        if checked is not None:
            data = checked  # read and held to the approval by start(), which made this run
        else:
            data = load_graph(run.graph_path, self.workspace,
                              approved=run.binding.get("graph_digest"),
                              limits=self.config.limits)
            # The document checked is the one that runs, with no window in between.
            run = self._hold_to_binding(run, data, force=force, sign=sign,
                                        forced_by=forced_by)
        policy = recovery.resume_policy(data)
        adopt = "resume_incomplete"
        if run.status is RunStatus.RUNNING and not fresh:
            recovery.recover(self.store, run, now=self.now())
            if policy == "restart":
                return await self._restart(run)
            adopt = policy
        elif reopen and run.status in (RunStatus.FAILED, RunStatus.PARTIAL) and \
                policy != "resume_incomplete":
            if policy == "restart":
                return await self._restart(run)
            adopt = policy
            append(self.store, run.run_id, EventType.RUN_RESUMED,
                   {"from": run.status.value, "policy": policy}, self.now(),
                   Transition(run_status=RunStatus.RUNNING))
            run = self.store.get_run(run.run_id) or run
        if run.status.terminal:
            return RunOutcome(run_id=run.run_id, status=run.status, digest=run.graph_digest)
        status = run.status
        for _ in range(_MAX_PASSES):
            answered = _answered(self.store, run.run_id)
            ctx = self._context(run, data, resume_policy=adopt)
            restore_spending(self.store, ctx)
            params = dict(run.binding.get("params") or {})
            context = dict(data.get("context") or {})
            inst = ScopeInstance(model=scope_model(data), path="", params=params,
                                 roots=scope_roots(ctx, data, params, context))
            if run.status is not RunStatus.RUNNING:
                ctx.emit(EventType.RUN_RESUMED, {"from": run.status.value},
                         Transition(run_status=RunStatus.RUNNING))
            own = _Counter("approval/answered")
            stop_counting = EventLog.of(self.store).listen(own)
            advancing()  # a driver turn's start is over (rein.core.collector)
            try:
                status = await execute(ctx, data, inst)
            finally:
                stop_counting()
            # An answer recorded by another process while this one held the lock would
            # otherwise wait for the next `rein resume`: pick it up now.
            if status is not RunStatus.AWAITING_HUMAN or \
                    _answered(self.store, run.run_id) - answered <= own.count:
                break
            run = self.store.get_run(run.run_id) or run
            adopt = "resume_incomplete"
        return RunOutcome(run_id=run.run_id, status=status, digest=run.graph_digest)

    def _hold_to_binding(self, run: RunRow, data: Mapping[str, Any], *, force: bool,
                         sign: Sign | None = None,
                         forced_by: Mapping[str, Any] | None = None) -> RunRow:
        """RT053 unless the run's files are the approved ones (and APPROVAL005 unless its
        approval verifies, where approvals are signed); a forced override is recorded
        (event ``run/forced``) and the run is bound to the files as they are now."""
        override = self.check_binding(run, force=force, data=data, sign=sign)
        if override is None:
            return run
        forced = override.get("x-rein-forced-resume") or {
            "changed": [], "at": self.now(), "approved_digest": run.binding.get("graph_digest")}
        if forced_by is not None:
            forced = {**forced, "given": dict(forced_by)}
        append(self.store, run.run_id, EventType.RUN_FORCED, forced,
               self.now(), Transition(binding={**run.binding, **override}))
        return self.store.get_run(run.run_id) or run

    async def _restart(self, run: RunRow) -> RunOutcome:
        """``policy.resume: restart``: a new run under the same approval; the old one ends."""
        new_id = RunId(self.ids.new("run"))
        now = self.now()
        binding = {**run.binding, "x-rein-restart-of": run.run_id}
        fresh = RunRow(run_id=new_id, graph_id=run.graph_id, graph_path=run.graph_path,
                       graph_digest=run.graph_digest, status=RunStatus.RUNNING,
                       started_at=now, binding=binding, workspace=run.workspace)
        with self.store.atomic():
            append(self.store, run.run_id, EventType.RUN_RESTARTED,
                   {"new_run_id": new_id, "policy": "restart"}, now,
                   Transition(run_status=RunStatus.CANCELLED, finished_at=now))
            self.store.create_run(fresh, event_type=EventType.RUN_STARTED, payload={
                "graph_id": run.graph_id, "digest": run.graph_digest,
                "params": dict(run.binding.get("params") or {}), "restart_of": run.run_id})
        return await self.proceed(new_id, fresh=True)

    def _context(self, run: RunRow, data: Mapping[str, Any], *, resume_policy: str
                 ) -> RunContext:
        """The context of one pass of ``run``, its state read from the store under
        ``resume_policy``."""
        constraints = data.get("constraints") or {}
        started = _parse(run.started_at)
        env = RunEnv(
            store=self.store, run_id=run.run_id, workspace=self.workspace, graph=data,
            graph_path=run.graph_path, digest=run.graph_digest, clock=self.clock, ids=self.ids,
            workers=self.placed_workers(), router=self.router,
            budget=BudgetTracker(limits=Limits.from_constraints(constraints), started_at=started),
            policy=dict(data.get("policy") or {}),
            max_parallel_nodes=int(constraints.get("max_parallel_nodes", 1)),
            max_depth=int(constraints.get("max_subgraph_depth", 5)),
            secrets=secrets_from_env(self.env), environ=self.env, resume_policy=resume_policy,
            sleep=self.sleep, checkers=self.checkers, harness_policy=self.harness_policy(),
            approved_children=_pinned(run.binding), signers=self.signers,
            load_limits=self.config.limits, execute_node=execute_node, run_child=run_child,
        )
        ctx = RunContext(env=env, state=read_state(self.store, run.run_id, resume_policy))
        return ctx



_MAX_PASSES = 5  # answers that keep arriving mid-pass are picked up this many times at most


class _Counter:
    """Counts the events of one type this process publishes."""

    def __init__(self, event_type: str) -> None:
        self.event_type = event_type
        self.count = 0

    def __call__(self, event: Any) -> None:
        if event.type == self.event_type:
            self.count += 1


def _answered(store: Store, run_id: str) -> int:
    """How many approvals of a run and its children have an answer."""
    return len([row for member in family(store, run_id)
                for row in store.approvals(run_id=member.run_id)
                if row.status is not ApprovalStatus.PENDING])



def _pinned(binding: Mapping[str, Any]) -> Mapping[str, str] | None:
    children = binding.get("children")
    return dict(children) if isinstance(children, Mapping) else None


def _public_params(data: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    return dict(params)


def _parse(text: str) -> Any:
    import datetime as dt

    return dt.datetime.fromisoformat(text)


__all__ = [
    "CANCEL_KEY",
    "Engine",
    "PrepareFailed",
    "Prepared",
    "RunOutcome",
    "current_binding",
    "prepare",
]
