"""Subgraph nodes (AGS §7.6): a child run with its own record and ``parent_run_id``.

``use`` and ``inline`` run a fragment of this document; ``ref`` loads another document,
resolved against the referencing file's folder, checked against ``integrity`` (RT051) and
``expected_id`` (RT052) and validated before anything runs. A document that (transitively)
references itself is refused. The child sees only its own params (bound from
``subgraph.params`` in the parent scope), its own context plus ``subgraph.context`` (and
the parent's with ``inherit_context``). ``outputs_from`` maps the child's final scope onto
this node's outputs; without it the child's outputs are copied. A ``partial`` child makes
the node succeed and the parent run at best ``partial``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.failures import FailureClass
from rein.core.states import NodeStatus, RunStatus
from rein.engine.run.evaluation import value
from rein.engine.run.kinds import ladder
from rein.engine.run.kinds.fragments import (
    FragmentProblem,
    bind_fragment_params,
    check_depth,
    fragment_of,
    report,
)
from rein.engine.run.node_steps import resolve_inputs
from rein.engine.run.outcome import NodeOutcome
from rein.engine.run.params import ParamsError, bind_params
from rein.engine.run.runtime import ChildSpec, NodeAt, RunContext
from rein.engine.run.signals import InputsMissing
from rein.formats.ags.spec import NodeSpec
from rein.formats.canonical import ags_digest


async def run_subgraph(here: NodeAt, node_spec: NodeSpec
                       ) -> NodeOutcome:
    node = node_spec.raw
    state = here.state
    block = node.get("subgraph") or {}
    key = here.key
    here.run.root().env.budget.start_execution(here.env.clock.now())
    state.attempts = 1
    scope = here.inst.scope()
    try:
        state.inputs = resolve_inputs(here, node)
        check_depth(here.run, here.inst)
        given = {name: value(here.run, scope, str(expr), f"node {here.nid} subgraph.params.{name}")
                 for name, expr in (block.get("params") or {}).items()}
        extra_context = dict(block.get("context") or {})
        if isinstance(block.get("ref"), Mapping):
            child = load_ref(here.run, block["ref"])
            data = child.data
            params = bind_params(data.get("params"), {k: v for k, v in given.items()
                                                      if v is not None}, source=child.path)
            context = {**(here.inst.roots.get("context") or {})} if block.get("inherit_context") \
                else {}
            context.update(data.get("context") or {})
            context.update(extra_context)
            spec = ChildSpec(document=data, fragment=data, path=child.path,
                                    digest=child.digest, graph_id=str(data.get("id")),
                                    params=params, context=context)
        else:
            fragment = block["inline"] if isinstance(block.get("inline"), Mapping) \
                else fragment_of(here.run, block, body_key="inline")
            params = bind_fragment_params(here.inst, fragment, given)
            context = {**(here.inst.roots.get("context") or {}), **extra_context}
            label = f"subgraphs/{block['use']}" if block.get("use") else f"nodes/{here.nid}"
            spec = ChildSpec(document=here.env.graph, fragment=fragment, path=here.env.graph_path,
                             digest=ags_digest(fragment),
                             graph_id=f"{here.env.graph.get('id')}#{label}",
                             params=params, context=context)
    except InputsMissing:
        return await ladder.exhausted(here, node_spec, None,
                                      failure=FailureClass.OUTPUT_MISSING)
    except (FragmentProblem, ParamsError, RefProblem) as problem:
        code = getattr(problem, "code", "RT033")
        report(here, FragmentProblem(code, getattr(problem, "message", str(problem))))
        return await ladder.exhausted(here, node_spec, None,
                                      failure=FailureClass.VALIDATION_ERROR)
    final, child_inst, child_id = await here.env.run_child(here.run, key, spec)
    outputs_from = block.get("outputs_from")
    if isinstance(outputs_from, Mapping):
        child_scope = child_inst.scope()
        child_scope.extra = {**child_scope.extra, "outputs": dict(final.outputs)}
        outputs = {name: value(here.run, child_scope, str(expr), f"node {here.nid} outputs_from")
                   for name, expr in outputs_from.items()}
    else:
        outputs = dict(final.outputs)
    if final.status in (RunStatus.SUCCEEDED, RunStatus.PARTIAL):
        return NodeOutcome(status=NodeStatus.SUCCEEDED, outputs=outputs,
                           degraded=final.status is RunStatus.PARTIAL,
                           record={"child_run_id": child_id})
    outcome = await ladder.exhausted(here, node_spec, None, failure=None,
                                     produced=outputs)
    return outcome.noting(child_run_id=child_id)


class RefProblem(Exception):
    """A referenced document cannot be used: missing, invalid, mismatched, recursive."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class LoadedRef:
    def __init__(self, path: str, data: Mapping[str, Any], digest: str) -> None:
        self.path = path
        self.data = data
        self.digest = digest


def ref_path(referencing: str, uri: str) -> Path:
    """A ``ref.uri`` resolved against the referencing document's folder."""
    if "://" in uri and not uri.startswith("file://"):
        raise RefProblem("RT051", f"remote subgraph {uri!r} is not fetched by this harness")
    uri = uri.removeprefix("file://")
    return (Path(referencing).parent / uri).resolve()


def load_ref(ctx: RunContext, ref: Mapping[str, Any]) -> LoadedRef:
    uri = str(ref.get("uri"))
    path = ref_path(ctx.env.graph_path, uri)
    chain = []
    c: RunContext | None = ctx
    while c is not None:
        chain.append(Path(c.env.graph_path).resolve())
        c = c.parent
    if path in chain:
        raise RefProblem("AG131", f"subgraph ref {uri!r} refers back to a document that "
                         "contains it (recursion)")
    from rein.formats.ags import validate_path  # the validator: only when a child is loaded
    from rein.formats.loader import DEFAULT_LIMITS

    report_ = validate_path(path, limits=ctx.env.load_limits or DEFAULT_LIMITS)
    if report_.document is None or report_.errors:
        first = report_.errors[0].message if report_.errors else "cannot be read"
        raise RefProblem("AG001", f"subgraph ref {uri!r} is not a valid graph: {first}")
    data = report_.document.data
    digest = ags_digest(data)
    integrity = ref.get("integrity")
    if integrity and integrity != digest:
        raise RefProblem("RT051", f"subgraph ref {uri!r} has digest {digest}, not the "
                         f"pinned integrity {integrity}")
    # What runs must be what was approved: a child edited since (by node work, say) is
    # refused even within the process that started the run.
    pinned = ctx.root().env.approved_children
    if pinned is not None and pinned.get(str(path)) != digest:
        approved = pinned.get(str(path))
        raise RefProblem("RT053", f"subgraph ref {uri!r} has digest {digest}, but the run was "
                         "approved with " + (approved or "no such document"))
    expected = ref.get("expected_id")
    if expected and expected != data.get("id"):
        raise RefProblem("RT052", f"subgraph ref {uri!r} has id {data.get('id')!r}, "
                         f"expected {expected!r}")
    level = int(data.get("requires_conformance", 1))
    if level > 3:
        raise RefProblem("AG303", f"subgraph ref {uri!r} requires conformance level {level}")
    return LoadedRef(str(path), data, digest)
