"""One attempt as a worker sees it: the request built from the node, and its delivery.

The request carries only what the node declares (AGS §12): its brief with instructions and
question rendered, its outputs and criteria, the environment names and secrets it lists, its
tools and permissions. :func:`drive` hands it to a worker and streams the worker's items
into the trace until the worker's result arrives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.engine.events import EventType
from rein.engine.run.attempt_session import EngineSession
from rein.engine.run.expressions import render
from rein.engine.run.routing import select_worker
from rein.engine.run.runtime import NodeAt, RunContext, ScopeInstance
from rein.engine.run.signals import Paused
from rein.formats.redaction import redact
from rein.workers.base import (
    AttemptRequest,
    AttemptResult,
    Feedback,
    ItemKind,
    OutputSpec,
    Routed,
    Worker,
    WorkerPaused,
)

# Permissions whose first use is a side effect (the before_side_effects checkpoint).
_MUTATING_PERMISSIONS = ("fs:write", "fs:delete", "git:commit", "git:push", "shell:exec")


def pick_worker(ctx: RunContext, request: AttemptRequest) -> Worker | None:
    """The first of the run's workers that can serve ``request`` (or the one it names)."""
    return select_worker(ctx.env.workers, request)


def build_request(here: NodeAt, node: Mapping[str, Any], *,
                  attempt: int, tier: str, kind: str, feedback: Feedback | None = None,
                  routed: Routed | None = None) -> AttemptRequest:
    """Attempt ``attempt`` of node ``here.nid`` as a worker request (attempt 1 without feedback
    is also the probe that pre-flight picks a worker with)."""
    state = here.state
    req = node.get("requirements") or {}
    env, secret_names = node_env(here.run, node)
    tools = tuple(t if isinstance(t, str) else str(t.get("name")) for t in req.get("tools") or [])
    return AttemptRequest(
        run_id=here.env.run_id, node_id=here.key, attempt=attempt,
        kind=kind,  # type: ignore[arg-type]
        title=str(node.get("title", here.nid)), brief=_brief(here.inst, here.nid, node, attempt,
                                                             kind),
        inputs=dict(state.inputs or {}), outputs=_output_specs(node),
        permissions=tuple(req.get("permissions") or ()), tools=tools,
        workspace=str(here.env.workspace), workspace_access=req.get("workspace", "read_only"),
        network=req.get("network", "none"), env=env, secret_names=secret_names,
        tier=tier,  # type: ignore[arg-type]
        feedback=feedback, branches=_branches(node), checks=_checks(node),
        constraints=dict(node.get("constraints") or {}),
        profile=node.get("x-rein-profile"), worker=node.get("x-rein-worker"),
        routed=routed, transcript=tuple(node.get("x-rein-transcript") or ()),
    )


def _brief(inst: ScopeInstance, nid: str, node: Mapping[str, Any], attempt: int,
           kind: str) -> str:
    """Description, then the rendered instructions, then a decision's rendered question."""
    state = inst.states[nid]
    scope = inst.scope().with_self({"id": nid, "attempt": attempt,
                                    "inputs": state.inputs or {}})
    brief = str(node.get("description", ""))
    if node.get("instructions"):
        brief += "\n\n" + render(str(node["instructions"]), scope)
    if kind == "decision":
        question = (node.get("decision") or {}).get("question")
        if question:
            brief += "\n\n" + render(str(question), scope)
    return brief


def _output_specs(node: Mapping[str, Any]) -> tuple[OutputSpec, ...]:
    return tuple(
        OutputSpec(name=name, type=str(s.get("type", "any")),
                   description=str(s.get("description", "")),
                   required=bool(s.get("required", True)), path_hint=s.get("path_hint"),
                   schema=s.get("schema"))
        for name, s in (node.get("outputs") or {}).items()
    )


def _branches(node: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    return tuple({"label": b["label"], "description": b.get("description", "")}
                 for b in (node.get("decision") or {}).get("branches") or [])


_CHECK_FIELDS = ("id", "kind", "description", "severity")


def _checks(node: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The success criteria as the worker is told of them (never their evaluation), with
    the parameters it needs to pass them (the command line, the path and ``min_bytes``,
    the pattern): all part of the graph the person approved."""
    return tuple(
        {"id": str(c.get("id", "")), "kind": str(c.get("kind", "")),
         "description": str(c.get("description", "")),
         "severity": str(c.get("severity", "required")),
         "params": {k: v for k, v in c.items() if k not in _CHECK_FIELDS}}
        for c in (node.get("success") or {}).get("criteria") or [] if isinstance(c, Mapping))


def node_env(ctx: RunContext, node: Mapping[str, Any]) -> tuple[dict[str, str], frozenset[str]]:
    """Declared environment names and secrets — only what the node lists (AGS §12)."""
    req = node.get("requirements") or {}
    env = {name: ctx.env.environ[name] for name in req.get("environment") or [] if name in ctx.env.environ}
    secret_names = set()
    for name in req.get("secrets") or []:
        if name in ctx.env.secrets:
            env[name] = ctx.env.secrets[name]
            secret_names.add(name)
    return env, frozenset(secret_names)


def with_session(ctx: RunContext, request: AttemptRequest, worker: Worker,
                 **also: Any) -> AttemptRequest:
    """Saved state and the approval queue for this attempt (a tool call in ``ask`` waits);
    ``also``: other fields to set in the same copy (a request is a frozen dataclass, and
    each copy builds it whole again)."""
    return request.replace(session=EngineSession(
        ctx=ctx, node_key=request.node_id, attempt=request.attempt, worker=worker.name),
        **also)


def is_mutating(node: Mapping[str, Any]) -> bool:
    """Whether the node may change something: a writable workspace, a writing permission,
    or secrets (their use is a side effect nobody can take back)."""
    req = node.get("requirements") or {}
    perms = [str(p) for p in req.get("permissions") or []]
    return req.get("workspace") == "read_write" or any(
        p.startswith(_MUTATING_PERMISSIONS) for p in perms) or bool(req.get("secrets"))


_HOOK_EVENTS = {ItemKind.HOOK_STARTED: EventType.HOOK_STARTED,
                ItemKind.HOOK_COMPLETED: EventType.HOOK_COMPLETED}


async def drive(here: NodeAt, worker: Worker,
                request: AttemptRequest) -> AttemptResult:
    """Run ``request`` through ``worker``: its items go to the trace, its result comes back.
    A worker that pauses pauses the run; one that ends without a result is a model error."""
    result: AttemptResult | None = None
    try:
        # Closed here, as the result arrives: left to the garbage collector, an async
        # generator is finalized by a task of its own and a wake-up of the loop, per attempt.
        stream = worker.run(request)
        try:
            async for item in stream:
                if isinstance(item, AttemptResult):
                    result = item
                    break
                hook = _HOOK_EVENTS.get(item.kind)
                if hook is not None:  # a lifecycle hook's run is an event of its own
                    here.run.emit(hook, {"node": here.key, "attempt": request.attempt,
                                         "run": dict(item.data)})
                    continue
                here.run.emit(EventType.ITEM, {"node": here.key, "attempt": request.attempt,
                                               "kind": item.kind.value, "data": dict(item.data)})
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
    except WorkerPaused as pause:
        reason = "worker" if pause.reason == "driver" else "human"
        raise Paused(reason, {"node": here.key, "token": pause.token, **pause.detail}
                     ) from pause
    if result is None:
        return AttemptResult(failure=FailureClass.MODEL_ERROR,
                             message=f"worker {worker.name!r} ended without a result")
    # Redacted before the run uses it: a secret never flows from one node's outputs into
    # another's inputs, and a resumed run, reading the store, sees what this one saw.
    secrets = here.env.known_secrets()
    if not secrets:  # nothing to replace: no copy of the result
        return result
    return result.replace(
        outputs=redact(dict(result.outputs), secrets),
        extra=redact(dict(result.extra), secrets),
        message=None if result.message is None else redact(result.message, secrets))
