"""Running a graph: prepare (LOAD → VALIDATE → PLAN → INITIALIZE checks), start, continue.

:func:`prepare` does everything that can be checked without spending: it loads and
validates the document, plans it, binds parameters (AG301/AG302), pins the digests of every
referenced child document, checks tier routing (RT011), required secrets, the conformance
level and that every failure ladder can run as written (LADDER001). ``--dry-run`` is
exactly this and writes nothing.

:class:`Engine` creates a run from a prepared graph whose digest the caller approved, and
continues any unfinished run (after a pause, in this process or another). Continuing is
replay with memory: terminal nodes are adopted from the store, everything else is scheduled
again, and answers given in the approval queue are found by key.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus
from rein.core.time import iso
from rein.engine import approvals, recovery
from rein.engine.budget import BudgetTracker, Limits
from rein.engine.clock import Clock, IdGenerator, RandomIds, SystemClock
from rein.engine.evaluation import diagnostic
from rein.engine.expressions import ExpressionFailed
from rein.engine.finalize import compensate, finalize
from rein.engine.graph import scope_model
from rein.engine.nodes import execute_node
from rein.engine.params import bind_params
from rein.engine.routing import Router
from rein.engine.runtime import ChildSpec, Final, Listener, RunContext, ScopeInstance
from rein.engine.scheduler import Scheduler, ScopeResult
from rein.engine.signals import Paused, RunCancelled
from rein.errors import Finding, Location, Refused, ReinError, RunError
from rein.formats.canonical import ags_digest
from rein.formats.redaction import SECRET_PREFIX
from rein.profiles.policy import Policy
from rein.store.base import ApprovalRow, RunRow, Store, Transition
from rein.tools.process import GROUP_WATCH
from rein.workers.base import Worker

CONFORMANCE_LEVEL = 3


class PrepareFailed(ReinError):
    """The graph cannot start: invalid, parameters wrong, tier unroutable, secret missing."""

    default_code = "PREPARE"

    def __init__(self, findings: list[Finding]) -> None:
        first = findings[0]
        super().__init__(first.message, code=first.code, hint=first.hint,
                         location=first.location)
        self.findings = findings


@dataclass(frozen=True, kw_only=True, slots=True)
class Prepared:
    """A graph that passed every check that costs nothing."""

    path: str
    data: Mapping[str, Any]
    digest: str
    params: Mapping[str, Any]
    children: Mapping[str, str]  # referenced document path → digest (the approval binds it)
    plan: Any  # rein.formats.ags.plan_model.Plan
    warnings: tuple[Finding, ...] = ()
    notices: tuple[str, ...] = ()

    def binding(self) -> dict[str, Any]:
        """What an approval of this graph binds: digest, params, child digests."""
        return {"graph_digest": self.digest, "params": dict(self.params),
                "children": dict(self.children)}


def secrets_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """``REIN_SECRET_<NAME>`` → ``{name: value}`` (names lower-cased as AGS binds them)."""
    return {k[len(SECRET_PREFIX):].lower(): v for k, v in env.items()
            if k.startswith(SECRET_PREFIX)}


def prepare(path: str | Path, *, given: Mapping[str, Any], raw: frozenset[str] = frozenset(),
            router: Router | None = None, env: Mapping[str, str] | None = None,
            key_variables: Iterable[str] = ()) -> Prepared:
    """LOAD, VALIDATE, PLAN and the INITIALIZE checks; raise :class:`PrepareFailed`.
    ``key_variables``: the provider key variables rein.toml names (flagged in the plan)."""
    from rein.formats.ags import validate_path
    from rein.formats.ags.ladder import ladder_problems
    from rein.formats.ags.plan import build_plan

    env = os.environ if env is None else env
    report = validate_path(path)
    if report.document is None or report.errors:
        raise PrepareFailed(list(report.errors) or [Finding(
            code="AG001", severity="error", message=f"{path} cannot be read",
            location=Location(file=str(path)))])
    data = report.document.data
    findings: list[Finding] = []
    level = int(data.get("requires_conformance", 1))
    if level > CONFORMANCE_LEVEL:
        findings.append(Finding(code="AG303", severity="error", message=(
            f"the graph requires conformance level {level}; rein implements "
            f"{CONFORMANCE_LEVEL}"), location=report.document.locate("/requires_conformance")))
    try:
        params = bind_params(data.get("params"), given, source=str(path), raw_text=raw)
    except ReinError as exc:
        findings.extend(getattr(exc, "findings", [exc.to_finding()]))
        params = {}
    children: dict[str, str] = {}
    try:
        _pin_children(str(path), data, children, seen={str(Path(path).resolve())})
    except ReinError as exc:
        findings.append(exc.to_finding())
    findings.extend(Finding(code=p.code, severity="error", message=p.message, hint=p.hint,
                            location=report.document.locate(p.pointer))
                    for p in ladder_problems(data))
    if router is not None and router.configured:
        findings.extend(_routing_findings(router, data, str(path)))
    have = secrets_from_env(env)
    for secret in data.get("secrets") or []:
        if secret.get("required", True) and secret.get("name") not in have:
            name = str(secret.get("name"))
            findings.append(Finding(
                code="SECRET001", severity="error",
                message=f"required secret {name!r} is not set",
                location=Location(file=str(path), pointer="/secrets"),
                hint=f"export {SECRET_PREFIX}{name.upper()}=... before running"))
    if findings:
        raise PrepareFailed(findings)
    plan = build_plan(data, source=str(path), key_variables=key_variables)
    notices = tuple(n.message for n in getattr(plan, "notices", ()))
    return Prepared(path=str(path), data=data, digest=report.digest or ags_digest(data),
                    params=params, children=children, plan=plan,
                    warnings=tuple(report.warnings), notices=notices)


def current_binding(path: str, params: Mapping[str, Any],
                    data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What an approval of ``path`` with ``params`` would bind today (RT053 compares it);
    ``data``: the document already loaded from ``path``."""
    from rein.formats.loader import load_path

    if data is None:
        data = load_path(path).data
    children: dict[str, str] = {}
    _pin_children(path, data, children, seen={str(Path(path).resolve())})
    bound = bind_params(data.get("params"), params, source=path)
    return {"graph_digest": ags_digest(data), "params": bound, "children": children}


def _pin_children(path: str, data: Mapping[str, Any], out: dict[str, str], *,
                  seen: set[str]) -> None:
    from rein.engine.kinds.subgraph import RefProblem, ref_path
    from rein.formats.loader import load_path

    for ref in _refs(data):
        uri = str(ref.get("uri"))
        try:
            child = ref_path(path, uri)
        except RefProblem as exc:
            raise RunError(exc.message, code=exc.code) from exc
        key = str(child)
        if key in seen:
            raise RunError(f"{uri} refers back to a document that contains it",
                           code="AG131", location=Location(file=path))
        try:
            doc = load_path(child)
        except ReinError as exc:
            raise RunError(f"subgraph ref {uri!r} cannot be loaded: {exc.message}",
                           code="AG001", location=Location(file=path),
                           hint="check the path; it is relative to the referencing file"
                           ) from exc
        digest = ags_digest(doc.data)
        if ref.get("integrity") and ref["integrity"] != digest:
            raise RunError(f"subgraph ref {uri!r} has digest {digest}, not the pinned "
                           f"{ref['integrity']}", code="RT051", location=Location(file=path))
        if ref.get("expected_id") and ref["expected_id"] != doc.data.get("id"):
            raise RunError(f"subgraph ref {uri!r} has id {doc.data.get('id')!r}, expected "
                           f"{ref['expected_id']!r}", code="RT052", location=Location(file=path))
        out[key] = digest
        _pin_children(key, doc.data, out, seen=seen | {key})


def _refs(value: Any) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    if isinstance(value, Mapping):
        sub = value.get("subgraph")
        if isinstance(sub, Mapping) and isinstance(sub.get("ref"), Mapping):
            found.append(sub["ref"])
        for v in value.values():
            found.extend(_refs(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_refs(v))
    return found


def _routing_findings(router: Router, data: Mapping[str, Any], path: str) -> list[Finding]:
    from rein.engine.graph import node_tier
    from rein.errors import RoutingError

    out = []
    seen: set[tuple[str, bool]] = set()
    for fragment in _fragments(data):
        for nid, node in scope_model(fragment).nodes.items():
            if node.get("type", "task") not in ("task", "decision"):
                continue
            tier = node_tier(node)
            intel = node.get("intelligence") or {}
            mark = (tier, bool(intel.get("allow_downgrade")))
            try:
                router.route(tier, intel, node=nid)
            except RoutingError as exc:
                if mark not in seen:
                    out.append(Finding(code="RT011", severity="error", message=exc.message,
                                       location=Location(file=path), hint=exc.hint))
                seen.add(mark)
    return out


def _fragments(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out = [data]
    for node in (data.get("nodes") or {}).values():
        for kind in ("loop", "map"):
            body = (node.get(kind) or {}).get("body")
            if isinstance(body, Mapping):
                out.extend(_fragments(body))
        inline = (node.get("subgraph") or {}).get("inline")
        if isinstance(inline, Mapping):
            out.extend(_fragments(inline))
    for fragment in (data.get("subgraphs") or {}).values():
        out.extend(_fragments(fragment))
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class RunOutcome:
    """Where a run stands when control returns to the caller."""

    run_id: RunId
    status: RunStatus
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "status": self.status.value, "digest": self.digest}


@dataclass(kw_only=True)
class Engine:
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
    # rein.toml [policy], the ceiling node requirements are checked against. None: read it
    # from the workspace's merged rein.toml, so an engine built without one fails closed.
    policy: Policy | None = None

    def __post_init__(self) -> None:
        # The store redacts on every write: teach it this engine's environment (which tests
        # inject) and the provider keys rein.toml names, before the first event.
        from rein.formats.redaction import known_secrets
        from rein.store.open import key_variables

        self.store.know(known_secrets(self.env, key_variables(self.workspace)))

    def start(self, prepared: Prepared, *, approved: str, actor: str = "cli") -> RunOutcome:
        """Create a run of an approved graph and advance it to its end or first wait."""
        if approved != prepared.digest:
            raise Refused(
                f"the approval names {approved}, but the graph's digest is {prepared.digest}",
                code="APPROVAL_STALE",
                hint="review the plan again and approve the digest rein prints",
            )
        try:  # the files as they are now, before anything is written (again under the lock)
            unchanged = current_binding(prepared.path, prepared.params) == prepared.binding()
        except ReinError:
            unchanged = False
        if not unchanged:
            raise Refused(f"{prepared.path} changed since its digest {prepared.digest} was "
                          "approved", code="RT053", location=Location(file=prepared.path),
                          hint="review the plan again and approve the digest rein prints")
        self._attach_telemetry()  # before the first event, so the run's span starts with it
        run_id = RunId(self.ids.new("run"))
        now = iso(self.clock.now())
        binding = {**prepared.binding(), "approved_digest": approved, "approved_by": actor}
        run = RunRow(run_id=run_id, graph_id=str(prepared.data.get("id")),
                     graph_path=str(Path(prepared.path).resolve()),
                     graph_digest=prepared.digest, status=RunStatus.RUNNING, started_at=now,
                     binding=binding)
        row = ApprovalRow(approval_id=ApprovalId(self.ids.new("apv")), run_id=run_id,
                          key=f"graph:{prepared.digest}", kind=ApprovalKind.GRAPH,
                          status=ApprovalStatus.ACCEPTED, digest=prepared.digest,
                          request={"binding": prepared.binding()}, created_at=now,
                          answer={"actor": actor}, answered_at=now)
        with self.store.atomic():  # a run never exists without the approval it ran under
            started = self.store.create_run(run, event_type="run/started", payload={
                "graph_id": run.graph_id, "digest": prepared.digest, "params": _public_params(
                    prepared.data, prepared.params)})
            approved = self.store.transition(run_id, "approval/answered", {
                "approval_id": row.approval_id, "kind": "graph", "status": "accepted",
                "digest": prepared.digest}, now, Transition(approval=row))
        self._publish(started)
        self._publish(approved)
        return asyncio.run(self.proceed_async(run_id, fresh=True))

    def now(self) -> str:
        return iso(self.clock.now())

    def harness_policy(self) -> Policy:
        """The policy runs of this engine are held to (loaded once from ``rein.toml``)."""
        if self.policy is None:
            from rein.config import load_config

            self.policy = Policy.from_config(load_config(self.workspace))
        return self.policy

    def _publish(self, event: Any) -> None:
        for listener in self.listeners:
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
                      data: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """RT053: the graph, params or child documents changed since the approval.

        The one check every continuation goes through (:meth:`proceed_async` calls it under
        the run lock; surfaces may call it first to refuse before recording anything).
        ``data``: the graph as this process is about to run it, so that what is checked is
        what runs. Returns the override to record when ``force`` lets a change through.
        """
        binding = dict(run.binding)
        try:
            now_binding = current_binding(run.graph_path, binding.get("params") or {},
                                          data=data)
        except ReinError as exc:
            now_binding = {"error": exc.message}
        old = {k: binding.get(k) for k in ("graph_digest", "params", "children")}
        if now_binding == old:
            return None
        if "error" in now_binding:
            changed = ["graph"]
            message = (f"run {run.run_id} cannot be held to its approval: the files no longer "
                       f"load as approved ({now_binding['error']})")
        else:
            changed = sorted(k for k in old if now_binding.get(k) != old[k])
            message = (f"run {run.run_id} was approved for a different "
                       f"{', '.join(changed)} than the files now hold")
        if not force or "error" in now_binding:
            raise Refused(message, code="RT053", location=Location(file=run.graph_path),
                          hint="restore the approved files or start a new run; `rein resume "
                               f"{run.run_id} --force` continues under the files as they are "
                               "now (the override is recorded)")
        # A forced continuation approves the files as they are now: the run is bound to them
        # from here on, and the record keeps what it was approved for before.
        return {**{k: now_binding[k] for k in old},
                "x-rein-forced-resume": {"changed": changed, "at": iso(self.clock.now()),
                                         "approved_digest": binding.get("graph_digest")}}

    def proceed(self, run_id: str, *, force: bool = False) -> RunOutcome:
        """Advance a run until it ends or waits. Safe to call again after a pause.

        Refused (RT053) when the approved graph, params or children changed, unless ``force``.
        """
        return asyncio.run(self.proceed_async(run_id, force=force))

    def cancel(self, run_id: str, *, actor: str, note: str | None = None,
               force: bool = False) -> RunOutcome:
        """Stop a run that has not ended: compensation runs and the run ends ``cancelled``.

        Compensation is node work of the graph, so a changed graph is refused (RT053) here
        too, before the request is recorded, unless ``force``.
        """
        return asyncio.run(self._cancel_async(run_id, actor=actor, note=note, force=force))

    async def _cancel_async(self, run_id: str, *, actor: str, note: str | None,
                            force: bool) -> RunOutcome:
        run = self.store.get_run(run_id)
        if run is None:
            raise RunError(f"no run {run_id!r}", code="RUN404",
                           hint="list runs with `rein runs list`")
        if run.parent_run_id is not None:
            raise Refused(f"{run_id} is a subgraph's child run", code="RUN_CHILD",
                          hint=f"cancel its top-level run ({run.parent_run_id} or above)")
        with self.store.lock_run(run.run_id):
            run = self.store.get_run(run.run_id) or run
            if run.status.terminal:
                raise Refused(f"run {run_id} already ended ({run.status.value})",
                              code="RUN_ENDED", hint="nothing to cancel")
            self.check_binding(run, force=force)  # before anything is recorded
            request = {"actor": actor, **({"note": note} if note else {})}
            self._publish(self.store.transition(
                run.run_id, "run/cancel_requested", request, self.now(),
                Transition(summary={**run.summary, CANCEL_KEY: request})))
            return await self.proceed_async(run.run_id, force=force)

    def resume(self, run_id: str, *, force: bool = False) -> RunOutcome:
        """``rein resume``: continue a paused or interrupted run, or reopen a failed one when
        its ``policy.resume`` is ``resume_failed`` or ``restart``."""
        return asyncio.run(self.proceed_async(run_id, reopen=True, force=force))

    async def proceed_async(self, run_id: str, *, fresh: bool = False,
                            reopen: bool = False, force: bool = False) -> RunOutcome:
        """Advance a run while holding its lock (``RUN_LOCKED`` when another process does).

        ``fresh``: the run was just created here. Otherwise a run found ``running`` was
        interrupted and is recovered first (:mod:`rein.engine.recovery`). ``reopen``: a
        failed or partial run runs again as its ``policy.resume`` says. Every continuation
        is held to the approved binding (RT053, :meth:`check_binding`); ``force`` lets a
        change through and records it.
        """
        run = self.store.get_run(run_id)
        if run is None:
            raise RunError(f"no run {run_id!r}", code="RUN404",
                           hint="list runs with `rein runs list`")
        while run.parent_run_id is not None:  # a child continues through its top-level run
            parent = self.store.get_run(run.parent_run_id)
            assert parent is not None
            run = parent
        self._attach_telemetry()
        with self.store.lock_run(run.run_id):
            token = GROUP_WATCH.set(recovery.GroupRecorder(self.store, run.run_id, self.now))
            try:
                return await self._advance(run.run_id, fresh=fresh, reopen=reopen,
                                           force=force)
            finally:
                GROUP_WATCH.reset(token)
                self._flush_listeners()

    async def _advance(self, run_id: RunId, *, fresh: bool, reopen: bool,
                       force: bool) -> RunOutcome:
        from rein.formats.loader import load_path

        run = self.store.get_run(run_id)  # again: it may have moved before the lock was ours
        assert run is not None
        if run.status.terminal and not reopen:
            return RunOutcome(run_id=run.run_id, status=run.status, digest=run.graph_digest)
        data = load_path(run.graph_path).data
        # Fresh runs too: the file is read again here, after the approval was computed. The
        # document checked is the one that runs, with no window in between.
        run = self._hold_to_binding(run, data, force=force)
        policy = recovery.resume_policy(data)
        adopt = "resume_incomplete"
        if run.status is RunStatus.RUNNING and not fresh:
            recovery.recover(self.store, run, now=self.now(), publish=self._publish)
            if policy == "restart":
                return await self._restart(run)
            adopt = policy
        elif reopen and run.status in (RunStatus.FAILED, RunStatus.PARTIAL) and \
                policy != "resume_incomplete":
            if policy == "restart":
                return await self._restart(run)
            adopt = policy
            self._publish(self.store.transition(
                run.run_id, "run/resumed", {"from": run.status.value, "policy": policy},
                self.now(), Transition(run_status=RunStatus.RUNNING)))
            run = self.store.get_run(run.run_id) or run
        if run.status.terminal:
            return RunOutcome(run_id=run.run_id, status=run.status, digest=run.graph_digest)
        status = run.status
        for _ in range(_MAX_PASSES):
            answered = _answered(self.store, run.run_id)
            ctx = self._context(run, data)
            ctx.resume_policy = adopt
            _load_memory(ctx)  # again, under the policy of this pass
            _restore_spending(self.store, ctx)
            params = dict(run.binding.get("params") or {})
            inst = ScopeInstance(model=scope_model(data), path="", params=params,
                                 roots=_roots(ctx, data, params, dict(data.get("context") or {})))
            if run.status is not RunStatus.RUNNING:
                ctx.emit("run/resumed", {"from": run.status.value},
                         Transition(run_status=RunStatus.RUNNING))
            own = _Counter("approval/answered")
            ctx.listeners.append(own)
            status = await execute(ctx, data, inst)
            # An answer recorded by another process while this one held the lock would
            # otherwise wait for the next `rein resume`: pick it up now.
            if status is not RunStatus.AWAITING_HUMAN or \
                    _answered(self.store, run.run_id) - answered <= own.count:
                break
            run = self.store.get_run(run.run_id) or run
            adopt = "resume_incomplete"
        return RunOutcome(run_id=run.run_id, status=status, digest=run.graph_digest)

    def _hold_to_binding(self, run: RunRow, data: Mapping[str, Any], *, force: bool
                         ) -> RunRow:
        """RT053 unless the run's files are the approved ones; a forced override is recorded
        (event ``run/forced``) and the run is bound to the files as they are now."""
        override = self.check_binding(run, force=force, data=data)
        if override is None:
            return run
        self._publish(self.store.transition(
            run.run_id, "run/forced", override["x-rein-forced-resume"], self.now(),
            Transition(binding={**run.binding, **override})))
        return self.store.get_run(run.run_id) or run

    async def _restart(self, run: RunRow) -> RunOutcome:
        """``policy.resume: restart``: a new run under the same approval; the old one ends."""
        new_id = RunId(self.ids.new("run"))
        now = self.now()
        binding = {**run.binding, "x-rein-restart-of": run.run_id}
        fresh = RunRow(run_id=new_id, graph_id=run.graph_id, graph_path=run.graph_path,
                       graph_digest=run.graph_digest, status=RunStatus.RUNNING,
                       started_at=now, binding=binding)
        with self.store.atomic():
            ended = self.store.transition(
                run.run_id, "run/restarted", {"new_run_id": new_id, "policy": "restart"}, now,
                Transition(run_status=RunStatus.CANCELLED, finished_at=now))
            started = self.store.create_run(fresh, event_type="run/started", payload={
                "graph_id": run.graph_id, "digest": run.graph_digest,
                "params": dict(run.binding.get("params") or {}), "restart_of": run.run_id})
        self._publish(ended)
        self._publish(started)
        return await self.proceed_async(new_id, fresh=True)

    def _context(self, run: RunRow, data: Mapping[str, Any]) -> RunContext:
        constraints = data.get("constraints") or {}
        started = _parse(run.started_at)
        ctx = RunContext(
            store=self.store, run_id=run.run_id, workspace=self.workspace, graph=data,
            graph_path=run.graph_path, digest=run.graph_digest, clock=self.clock, ids=self.ids,
            workers=self.workers, router=self.router,
            budget=BudgetTracker(limits=Limits.from_constraints(constraints), started_at=started),
            policy=dict(data.get("policy") or {}),
            max_parallel_nodes=int(constraints.get("max_parallel_nodes", 1)),
            max_depth=int(constraints.get("max_subgraph_depth", 5)),
            secrets=secrets_from_env(self.env), env=self.env, listeners=list(self.listeners),
            sleep=self.sleep, checkers=self.checkers, harness_policy=self.harness_policy(),
            approved_children=_pinned(run.binding), execute_node=execute_node,
            run_child=run_child,
        )
        _load_memory(ctx)
        return ctx


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
    stop = ctx.root().budget_stop
    if stop is not None and ctx.parent is None:
        diagnostic(ctx, "RT061", "error", str(stop.get("message")))
    summary = {"outputs": dict(final.outputs)}
    if final.graph_success is not None:
        summary["graph_success"] = dict(final.graph_success)
    if final.human_events:
        summary["human_events"] = [dict(e) for e in final.human_events]
    ctx.emit("run/finished", {"status": final.status.value},
             Transition(run_status=final.status, finished_at=ctx.now(), summary=summary))
    return final.status


CANCEL_KEY = "x-rein-cancel"  # in the run's summary: an operator asked to stop the run


def _raise_if_cancel_requested(ctx: RunContext) -> None:
    run = ctx.store.get_run(ctx.run_id)
    request = (run.summary if run is not None else {}).get(CANCEL_KEY)
    if request:
        raise RunCancelled(by=str(request.get("actor") or "an operator"))


def _pause(ctx: RunContext, reason: str) -> RunStatus:
    status = RunStatus.AWAITING_HUMAN if reason == "human" else RunStatus.WAITING
    ctx.emit("run/paused", {"status": status.value, "reason": reason},
             Transition(run_status=status))
    return status


async def run_child(ctx: RunContext, key: NodeKey, spec: ChildSpec
                    ) -> tuple[Final, ScopeInstance, RunId]:
    """Run (or continue) the child run of subgraph node ``key``; pauses propagate."""
    existing = [r for r in ctx.store.child_runs(ctx.run_id) if r.parent_node_key == key]
    if existing:
        run = existing[-1]
    else:
        run = RunRow(run_id=RunId(ctx.ids.new("run")), graph_id=spec.graph_id,
                     graph_path=spec.path, graph_digest=spec.digest, status=RunStatus.RUNNING,
                     started_at=ctx.now(), parent_run_id=ctx.run_id, parent_node_key=key,
                     binding={"params": dict(spec.params)})
        event = ctx.store.create_run(run, event_type="run/started", payload={
            "graph_id": spec.graph_id, "parent_run_id": ctx.run_id, "node": key})
        for listener in ctx.root().listeners:
            listener(event)
    constraints = spec.document.get("constraints") or {} if spec.document is spec.fragment \
        else {}
    child = ctx.child(
        run_id=run.run_id, graph=spec.document, graph_path=spec.path, digest=spec.digest,
        policy=dict(spec.document.get("policy") or ctx.policy),
        max_parallel_nodes=min(int(constraints.get("max_parallel_nodes",
                                                   ctx.max_parallel_nodes)),
                               ctx.max_parallel_nodes) if constraints else ctx.max_parallel_nodes,
    )
    _load_memory(child)
    if run.status.terminal:
        pass  # adopted below through the memo: every node is terminal
    inst = ScopeInstance(model=scope_model(spec.fragment), path="", params=dict(spec.params),
                         roots=_roots(child, spec.document, dict(spec.params),
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
        summary = {"outputs": dict(final.outputs)}
        if final.graph_success is not None:
            summary["graph_success"] = dict(final.graph_success)
        child.emit("run/finished", {"status": final.status.value},
                   Transition(run_status=final.status, finished_at=child.now(), summary=summary))
    return final, inst, run.run_id


def _roots(ctx: RunContext, data: Mapping[str, Any], params: dict[str, Any],
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
            out[name] = _attachment_text(ctx.workspace, str(att["path"]))
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


def _load_memory(ctx: RunContext) -> None:
    """Stored node rows the replay may use: terminal ones the resume policy adopts, and
    unfinished ones (their closed attempts are kept)."""
    policy = ctx.root().resume_policy
    ctx.memo.clear()
    for row in ctx.store.nodes(ctx.run_id):
        if not row.status.terminal or recovery.adoptable(row.status, policy):
            ctx.memo[row.node_key] = row
    ctx.edges_seen = {(str(e.payload.get("scope") or ""), str(e.payload.get("from")),
                       str(e.payload.get("to")), str(e.payload.get("kind")))
                      for e in ctx.store.events(ctx.run_id) if e.type == "edge/resolved"}
    approvals.load_answers(ctx)


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
    return sum(1 for member in recovery.family(store, run_id)
               for row in store.approvals(run_id=member.run_id)
               if row.status is not ApprovalStatus.PENDING)


def _restore_spending(store: Store, ctx: RunContext) -> None:
    """Usage already spent by this run (and its children) counts against its budgets."""
    from rein.engine.record import usage_of

    spent = ctx.budget.spent
    total = usage_of(store, ctx.run_id, include_children=True, settled_only=True)
    spent.input_tokens = int(total.get("input_tokens", 0))
    spent.output_tokens = int(total.get("output_tokens", 0))
    spent.cost_usd = float(total.get("cost_usd", 0.0))
    spent.tool_calls = int(total.get("tool_calls", 0))
    spent.node_executions = int(total.get("node_executions", 0))


def _pinned(binding: Mapping[str, Any]) -> Mapping[str, str] | None:
    children = binding.get("children")
    return dict(children) if isinstance(children, Mapping) else None


def _public_params(data: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    return dict(params)


def _parse(text: str) -> Any:
    import datetime as dt

    return dt.datetime.fromisoformat(text)


__all__ = [
    "Engine",
    "NodeStatus",
    "PrepareFailed",
    "Prepared",
    "RunOutcome",
    "ScopeResult",
    "prepare",
]
