"""Preparing a run: LOAD → VALIDATE → PLAN → the INITIALIZE checks, spending nothing; then
starting it as approved.

:func:`prepare` loads and validates the document, plans it, binds parameters
(AG301/AG302), pins the digests of every referenced child document, checks tier routing
(RT011), required secrets, the conformance level, that every failure ladder can run as
written (LADDER001) and that every criterion's regular expression is one rein runs
(CRIT001, CRIT008). ``--dry-run`` is exactly this and writes nothing.
:func:`current_binding` is what an approval of the files would bind today: a run is held
to it on every continuation (RT053). :class:`Starter` is :func:`prepare` and the start of
the approved graph (who approved it, how, signed where approvals are signed), bound to the
composition root: the one way the Harness and the session runtime prepare and start a run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rein.core.frozen import Frozen
from rein.core.ids import RunId
from rein.engine.run.graph import LARGE_SCOPE, scope_model
from rein.engine.run.params import bind_params
from rein.engine.run.routing import Router
from rein.errors import Finding, Location, Refused, ReinError, RunError
from rein.formats.canonical import ags_digest
from rein.formats.loader import DEFAULT_LIMITS, LoadLimits
from rein.formats.redaction import SECRET_PREFIX, secrets_from_env
from rein.store.base import ApprovalRow, RunRow

if TYPE_CHECKING:
    from rein.config.approver import Approver
    from rein.engine.run.answering import Via
    from rein.engine.run.clock import IdGenerator
    from rein.engine.run.outcome import RunOutcome

CONFORMANCE_LEVEL = 3


class PrepareFailed(ReinError):
    """The graph cannot start: invalid, parameters wrong, tier unroutable, secret missing."""

    default_code = "PREPARE"

    def __init__(self, findings: list[Finding]) -> None:
        first = findings[0]
        super().__init__(first.message, code=first.code, hint=first.hint,
                         location=first.location)
        self.findings = findings


class Prepared(Frozen):
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


def check_approved(prepared: Prepared, approved: str) -> None:
    """APPROVAL_STALE unless ``approved`` names the digest of exactly this graph."""
    if approved != prepared.digest:
        raise Refused(
            f"the approval names {approved}, but the graph's digest is {prepared.digest}",
            code="APPROVAL_STALE",
            hint="review the plan again and approve the digest rein prints")


def prepare(path: str | Path, *, given: Mapping[str, Any], raw: frozenset[str] = frozenset(),
            router: Router | None = None, env: Mapping[str, str] | None = None,
            key_variables: Iterable[str] = (), limits: LoadLimits = DEFAULT_LIMITS) -> Prepared:
    """LOAD, VALIDATE, PLAN and the INITIALIZE checks; raise :class:`PrepareFailed`.
    ``key_variables``: the provider key variables rein.toml names (flagged in the plan);
    ``limits``: the loader's, from rein.toml's ``[limits]``, for the graph and its children.
    The collector is paused meanwhile: what is built here is the document, its findings and
    its plan, all alive until the end and acyclic (:mod:`rein.core.collector`)."""
    from rein.core.collector import paused

    with paused():
        return _prepare(path, given=given, raw=raw, router=router, env=env,
                        key_variables=key_variables, limits=limits)


def _prepare(path: str | Path, *, given: Mapping[str, Any], raw: frozenset[str],
             router: Router | None, env: Mapping[str, str] | None,
             key_variables: Iterable[str], limits: LoadLimits) -> Prepared:
    from rein.formats.ags import validate_path
    from rein.formats.ags.criterion_patterns import pattern_problems
    from rein.formats.ags.ladder import ladder_problems
    from rein.formats.ags.plan import build_plan

    env = os.environ if env is None else env
    report = validate_path(path, limits=limits)
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
        _pin_children(str(path), data, children, seen={str(Path(path).resolve())},
                      limits=limits)
    except ReinError as exc:
        findings.append(exc.to_finding())
    findings.extend(Finding(code=p.code, severity="error", message=p.message, hint=p.hint,
                            location=report.document.locate(p.pointer))
                    for p in (*ladder_problems(data), *pattern_problems(data)))
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
    digest = report.digest or ags_digest(data)  # the validator's: computed once
    plan = build_plan(data, source=str(path), key_variables=key_variables, digest=digest)
    notices = tuple(n.message for n in getattr(plan, "notices", ()))
    if report.document.line_offset == 0:
        from rein.engine.run.graph_cache import remember

        # Starting it parses the file only if it changed.
        remember(report.document.text, data, digest)
    return Prepared(path=str(path), data=data, digest=digest,
                    params=params, children=children, plan=plan,
                    warnings=tuple(report.warnings), notices=notices)


START_HINT = ("a person starts it from their own terminal (`rein run GRAPH --approve DIGEST`, "
              "`rein dev`), where their key signs its approval")


class _Starts(Protocol):
    """The engine's start (:meth:`rein.engine.run.runner.Engine.start`)."""

    async def start(self, prepared: Prepared, *, approved: str, actor: str = ...,
                    given: Mapping[str, Any] | None = ..., run_id: RunId | None = ...,
                    approval: Mapping[str, Any] | None = ...) -> RunOutcome: ...


class Starter(Frozen):
    """Runs prepared and started as approved here: :func:`prepare` and the engine's start,
    bound once to what the composition root (the Harness) holds. ``Harness.prepare`` and
    ``Harness.start`` are these, and the session runtime is handed them, not the Harness: a
    thread's turn prepares and starts its run the way ``rein run`` does. What is built on
    first use (the router, the workers, the engine) is given as a function that builds it."""

    workspace: Path
    surface: str  # who starts runs here: cli, web, app-server, acp, api
    env: Mapping[str, str]
    router: Callable[[], Router]
    workers: Callable[[], object]  # the configured workers, built for their checks
    key_variables: Callable[[], tuple[str, ...]]  # flagged in the plan
    limits: Callable[[], LoadLimits]  # what a graph read may take (rein.toml's [limits])
    engine: Callable[[], _Starts]
    approver: Callable[[], Approver]  # the approver rein knows here
    ids: Callable[[], IdGenerator]
    # Signs ``message`` with the approver's key through this surface's signer:
    # ``(message, *, what, hint) -> signature``; APPROVAL004 when it cannot.
    sign: Callable[..., str]

    def prepare(self, path: str | Path, *, given: Mapping[str, Any],
                raw: frozenset[str] = frozenset()) -> Prepared:
        """Every check that costs nothing (PrepareFailed); writes nothing. The configured
        workers are built too, so that a malformed table is refused here (ConfigError)."""
        self.workers()
        return prepare(path, given=given, raw=raw, router=self.router(), env=self.env,
                       key_variables=self.key_variables(), limits=self.limits())

    async def start(self, prepared: Prepared, *, approved: str, via: Via | None = None,
                    under: ApprovalRow | None = None) -> RunOutcome:
        """Run an approved graph to its end or first wait, recorded as approved by the
        approver rein knows, with how (``via``: the surface, this one when not given).
        APPROVAL_STALE before the store is touched.

        Where approvals are signed, the person's key signs the run's approval (its id,
        graph, parameters and children) before anything is written: APPROVAL004 when this
        surface cannot sign. ``under``: instead, the signed approval that showed the graph
        file (the development flow's plan approval), checked as the run starts and every
        time it continues (APPROVAL005)."""
        from rein.core.confinement import confinement
        from rein.engine.run.answering import Via, given

        check_approved(prepared, approved)  # before the store exists: nothing is written
        approver = self.approver()
        run_id: RunId | None = None
        approval: dict[str, Any] = {}
        signed: dict[str, Any] | None = None
        if approver.allowed_signers is not None:
            from rein.engine.run import signed as signing

            run_id = RunId(self.ids().new("run"))
            if under is not None:
                approval = signing.started_under(prepared.path, under, self.workspace)
            else:
                approval, signed = signing.started_signed(
                    run_id, prepared.binding(), approver.id,
                    signing.Signers(approver.allowed_signers, self.workspace),
                    lambda message: self.sign(message, what=f"the approval of run {run_id}",
                                              hint=START_HINT))
        # Starting is the starter's approval of the graph: a confined starter (an agent)
        # may start what it wrote where approvals are not signed, and the record says so;
        # its gates wait for a person.
        how = given(approver=approver, via=via or Via(surface=self.surface),
                    state=confinement(), signed=signed)
        if under is not None and approval:
            how["under_approval"] = under.approval_id
        start = self.engine().start(prepared, approved=approved, actor=approver.id,
                                    given=how, run_id=run_id, approval=approval)
        nodes = prepared.data.get("nodes")
        if not (isinstance(nodes, Mapping) and len(nodes) >= LARGE_SCOPE):
            # A small graph is not worth it, and a freeze keeps uncollected cycles until the
            # last frozen run ends: a server that always has a run in flight would keep them.
            return await start
        from rein.core.collector import settled

        # A large graph, its plan and its scope model live as long as the run: not walked by
        # every full collection while it advances (rein.core.collector).
        with settled():
            return await start


def current_binding(path: str, params: Mapping[str, Any],
                    data: Mapping[str, Any] | None = None, *,
                    limits: LoadLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """What an approval of ``path`` with ``params`` would bind today (RT053 compares it);
    ``data``: the document already loaded from ``path``."""
    from rein.formats.loader import load_path

    if data is None:
        data = load_path(path, limits=limits).data
    children: dict[str, str] = {}
    _pin_children(path, data, children, seen={str(Path(path).resolve())}, limits=limits)
    bound = bind_params(data.get("params"), params, source=path)
    return {"graph_digest": ags_digest(data), "params": bound, "children": children}


_BOUND = ("graph_digest", "params", "children")  # what an approval binds


def binding_changes(run: RunRow, *, data: Mapping[str, Any] | None = None,
                    limits: LoadLimits = DEFAULT_LIMITS) -> tuple[list[str], dict[str, Any]]:
    """What differs between ``run``'s approval and its files now (``graph_digest``,
    ``params``, ``children``; ``["graph"]`` when they no longer load), and the binding the
    files give now (``{"error": ...}`` when they do not load). Reads only."""
    binding = dict(run.binding)
    try:
        now_binding = current_binding(run.graph_path, binding.get("params") or {},
                                      data=data, limits=limits)
    except ReinError as exc:
        return ["graph"], {"error": exc.message}
    old = {k: binding.get(k) for k in _BOUND}
    return sorted(k for k in old if now_binding.get(k) != old[k]), now_binding


def binding_override(run: RunRow, *, force: bool, data: Mapping[str, Any] | None = None,
                     now: Callable[[], str], limits: LoadLimits = DEFAULT_LIMITS
                     ) -> dict[str, Any] | None:
    """RT053 unless ``run``'s files are still the approved ones (graph, params, children).

    ``data``: the graph as the caller is about to run it, so that what is checked is what
    runs. With ``force``, a change is let through: the binding to record (the files as they
    are now, and what the run was approved for before, at ``now()``) is returned.
    """
    binding = dict(run.binding)
    changed, now_binding = binding_changes(run, data=data, limits=limits)
    if not changed:
        return None
    old = {k: binding.get(k) for k in _BOUND}
    if "error" in now_binding:
        message = (f"run {run.run_id} cannot be held to its approval: the files no longer "
                   f"load as approved ({now_binding['error']})")
    else:
        message = (f"run {run.run_id} was approved for a different "
                   f"{', '.join(changed)} than the files now hold")
    if not force or "error" in now_binding:
        raise Refused(message, code="RT053", location=Location(file=run.graph_path),
                      hint="restore the approved files or start a new run; a person who "
                           f"reviewed the change may run `rein resume {run.run_id} --force` "
                           "in their own terminal, which approves the files as they are now "
                           "(an agent stops here and tells the person)")
    # A forced continuation approves the files as they are now: the run is bound to them
    # from here on, and the record keeps what it was approved for before.
    return {**{k: now_binding[k] for k in old},
            "x-rein-forced-resume": {"changed": changed, "at": now(),
                                     "approved_digest": binding.get("graph_digest")}}


def _pin_children(path: str, data: Mapping[str, Any], out: dict[str, str], *,
                  seen: set[str], limits: LoadLimits) -> None:
    for ref in _refs(data):
        # the subgraph kind and the loader, for a graph that refers to another file only
        from rein.engine.run.kinds.subgraph import RefProblem, ref_path
        from rein.formats.loader import load_path

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
            doc = load_path(child, limits=limits)
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
        _pin_children(key, doc.data, out, seen=seen | {key}, limits=limits)


def _refs(fragment: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``subgraph.ref`` of every node in every scope of ``fragment``: each node's own,
    then those in its bodies (loop, map, inline subgraph), then the named subgraphs'. Only
    the nodes are looked at: a 100,000-node graph's inputs, outputs and criteria are not
    walked value by value (tests/engine/test_prepare_cost.py)."""
    found: list[Mapping[str, Any]] = []
    nodes = fragment.get("nodes")
    for node in nodes.values() if isinstance(nodes, Mapping) else ():
        if not isinstance(node, Mapping):
            continue
        sub = node.get("subgraph")
        if isinstance(sub, Mapping):
            if isinstance(sub.get("ref"), Mapping):
                found.append(sub["ref"])
            if isinstance(sub.get("inline"), Mapping):
                found.extend(_refs(sub["inline"]))
        for kind in ("loop", "map"):
            block = node.get(kind)
            if isinstance(block, Mapping) and isinstance(block.get("body"), Mapping):
                found.extend(_refs(block["body"]))
    named = fragment.get("subgraphs")
    for body in named.values() if isinstance(named, Mapping) else ():
        if isinstance(body, Mapping):
            found.extend(_refs(body))
    return found


def _routing_findings(router: Router, data: Mapping[str, Any], path: str) -> list[Finding]:
    from rein.engine.run.graph import node_tier
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


__all__ = ["CONFORMANCE_LEVEL", "START_HINT", "PrepareFailed", "Prepared", "Starter",
           "binding_changes", "binding_override", "check_approved", "current_binding", "prepare",
           "secrets_from_env"]
