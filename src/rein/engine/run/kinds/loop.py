"""Loop nodes (AGS §7.4): while / until / repeat over a fresh body scope per iteration.

``while`` tests ``condition`` before each iteration (the first test sees only outer names
and the loop namespace), ``until`` after each, ``repeat`` runs exactly ``max_iterations``
and succeeds. ``carry`` feeds a body output into the next iteration's param; ``collect`` is
evaluated in each iteration's scope and the last values become the node's outputs, the
previous ones ``loop.previous``. Reaching ``max_iterations`` without the exit condition is
RT021 and ``on_max_iterations`` decides. A failed iteration fails the loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.states import NodeStatus
from rein.engine.run.evaluation import condition, diagnostic, value
from rein.engine.run.kinds import ladder
from rein.engine.run.kinds.fragments import (
    FragmentProblem,
    begin_container,
    bind_fragment_params,
    fail_fragment,
    instance,
    model_of,
)
from rein.engine.run.outcome import NodeOutcome, failed, succeeded
from rein.engine.run.runtime import NodeAt, ScopeInstance
from rein.engine.run.scheduler import Scheduler
from rein.engine.run.signals import Paused
from rein.formats.ags.spec import NodeSpec


async def run_loop(here: NodeAt, spec: NodeSpec
                   ) -> NodeOutcome:
    node = spec.raw
    block = node.get("loop") or {}
    fragment = await begin_container(here, spec, block)
    if isinstance(fragment, NodeOutcome):
        return fragment
    try:
        params = bind_fragment_params(here.inst, fragment, {})
    except FragmentProblem as problem:
        return await fail_fragment(here, spec, problem)
    model = model_of(fragment)
    mode = block.get("mode", "repeat")
    cond = str(block.get("condition", "false"))
    limit = int(block.get("max_iterations", 1))
    collect: Mapping[str, str] = block.get("collect") or {}
    carry: Mapping[str, str] = block.get("carry") or {}
    previous: dict[str, Any] | None = None
    collected: dict[str, Any] = {}
    last: ScopeInstance | None = None
    met = False
    iterations = 0
    for i in range(limit):
        loop_ns: dict[str, Any] = {"index": i, "iteration": i + 1}
        if previous is not None:
            loop_ns["previous"] = previous
        if mode == "while":
            probe = last or instance(here.run, here.inst, model, path="", params=params,
                                     loop=loop_ns)
            probe.roots["loop"] = loop_ns
            if not condition(here.run, probe.scope(), cond, f"node {here.nid} loop.condition"):
                met = True
                break
        it = instance(here.run, here.inst, model, path=f"{here.key}[{i}]", params=params,
                      loop=loop_ns)
        result = await Scheduler(here.run, it).run()
        if result.paused:
            raise Paused(result.paused, {"node": here.key, "iteration": i})
        iterations = i + 1
        last = it
        if result.failed:
            diagnostic(here.run, "RUN000", "error", f"loop {here.nid}: iteration {i} failed",
                       node=here.key)
            outcome = await ladder.exhausted(here, spec, None, failure=None)
            return outcome.noting(iterations=iterations)
        scope = it.scope()
        collected = {name: value(here.run, scope, str(expr), f"node {here.nid} loop.collect.{name}")
                     for name, expr in collect.items()}
        previous = collected
        params = {**params, **_carried(it, fragment, carry)}
        if mode == "until" and condition(here.run, scope, cond, f"node {here.nid} loop.condition"):
            met = True
            break
    if mode == "repeat" or met:
        return succeeded(collected, record={"iterations": iterations})
    diagnostic(here.run, "RT021", "error",
               f"loop {here.nid} reached max_iterations {limit} without "
               "meeting its exit condition", node=here.key)
    match block.get("on_max_iterations", "fail"):
        case "succeed":
            return succeeded(collected, record={"iterations": iterations})
        case "escalate":
            resolved = await ladder.escalate(here, spec, reason="max_iterations",
                                             produced=collected)
            if resolved is not None:
                return resolved.noting(iterations=iterations)
    return failed(iterations=iterations).replace(outputs=collected)


def _carried(it: ScopeInstance, fragment: Mapping[str, Any], carry: Mapping[str, str]
             ) -> dict[str, Any]:
    """Body output → next iteration's param: fragment outputs first, else the topologically
    last succeeded node that produced that output name."""
    out: dict[str, Any] = {}
    for output, param in carry.items():
        found = None
        for node_id in sorted(it.states, key=it.model.rank.__getitem__, reverse=True):
            st = it.states[node_id]
            if st.status is NodeStatus.SUCCEEDED and output in st.outputs:
                found = st.outputs[output]
                break
        if found is not None:
            out[param] = found
    return out
