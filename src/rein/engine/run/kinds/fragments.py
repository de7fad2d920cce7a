"""What loops, maps and subgraphs share: starting the node, finding a fragment, binding its
params, depth.

A fragment's params are bound from what the container passes (``carry``, ``subgraph.params``),
then their defaults, then a same-named parameter of the enclosing scope; a required one left
unbound fails the container with RT033. A fragment that declares no params sees the
enclosing scope's params (the reference validator's reading, AGS digest §a.10).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.engine.run.evaluation import diagnostic
from rein.engine.run.graph import ScopeModel, scope_model
from rein.engine.run.kinds import ladder
from rein.engine.run.node_steps import resolve_inputs
from rein.engine.run.outcome import NodeOutcome
from rein.engine.run.runtime import NodeAt, RunContext, ScopeInstance
from rein.engine.run.signals import InputsMissing
from rein.formats.ags.spec import NodeSpec


class FragmentProblem(Exception):
    """The fragment cannot be instantiated (unknown ``use``, unbound param, too deep)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def fragment_of(ctx: RunContext, block: Mapping[str, Any], *, body_key: str = "body"
                ) -> Mapping[str, Any]:
    body = block.get(body_key)
    if isinstance(body, Mapping):
        return body
    name = block.get("use")
    named = (ctx.env.graph.get("subgraphs") or {}) if isinstance(ctx.env.graph, Mapping) else {}
    if name in named:
        declared: Mapping[str, Any] = named[name]
        return declared
    raise FragmentProblem("AG132", f"fragment {name!r} is not declared in subgraphs")


def bind_fragment_params(inst: ScopeInstance, fragment: Mapping[str, Any],
                         given: Mapping[str, Any]) -> dict[str, Any]:
    specs = fragment.get("params")
    outer = inst.params
    if not specs:
        return {**outer, **given}
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        if name in given and given[name] is not None:
            out[name] = given[name]
        elif "default" in spec:
            out[name] = spec["default"]
        elif name in outer:
            out[name] = outer[name]
        elif spec.get("required", True):
            raise FragmentProblem("RT033", f"fragment parameter {name!r} has no value")
    return out


def check_depth(ctx: RunContext, inst: ScopeInstance) -> None:
    depth = ctx.env.depth + inst.path.count("[") + 1
    if depth > ctx.env.max_depth:
        raise FragmentProblem(
            "RT061", f"nesting depth {depth} exceeds constraints.max_subgraph_depth "
            f"{ctx.env.max_depth}")


def instance(ctx: RunContext, parent: ScopeInstance, model: ScopeModel, *, path: str,
             params: dict[str, Any], loop: Mapping[str, Any] | None = None,
             extra: Mapping[str, Any] | None = None) -> ScopeInstance:
    roots = {**parent.roots, "params": params}
    roots.pop("loop", None)
    if loop is not None:
        roots["loop"] = loop
    return ScopeInstance(model=model, path=path, params=params, roots=roots,
                         extra=dict(extra or {}))


def model_of(fragment: Mapping[str, Any]) -> ScopeModel:
    return scope_model(fragment)


def report(here: NodeAt, problem: FragmentProblem) -> None:
    diagnostic(here.run, problem.code, "error", f"node {here.nid}: {problem.message}",
               node=here.key)


async def fail_fragment(here: NodeAt, spec: NodeSpec,
                        problem: FragmentProblem) -> NodeOutcome:
    """Report ``problem`` and fail the container node through its failure ladder."""
    report(here, problem)
    return await ladder.exhausted(here, spec, None, failure=FailureClass.VALIDATION_ERROR)


async def begin_container(here: NodeAt,
                          spec: NodeSpec, block: Mapping[str, Any]
                          ) -> Mapping[str, Any] | NodeOutcome:
    """Start a loop or map node: count its one execution, resolve its inputs, check the
    nesting depth and find its body fragment. When one of those failed, the outcome the
    failure ladder gave the node instead."""
    state = here.state
    here.run.root().env.budget.start_execution(here.env.clock.now())
    state.attempts = 1
    try:
        state.inputs = resolve_inputs(here, spec.raw)
        check_depth(here.run, here.inst)
        return fragment_of(here.run, block)
    except InputsMissing:
        return await ladder.exhausted(here, spec, None,
                                      failure=FailureClass.OUTPUT_MISSING)
    except FragmentProblem as problem:
        return await fail_fragment(here, spec, problem)
