"""Map nodes (AGS §7.5): one body scope instance per element, really in parallel.

``over`` is evaluated in the parent scope (not an array: RT025). More than ``max_items``:
``on_over_limit: fail`` fails (RT026), ``truncate`` keeps the first ``max_items`` with an
RT026 warning. At most ``max_parallel`` items run at once, capped by
``constraints.max_parallel_nodes``. ``collect`` is evaluated per item in the item's scope
and gathered in input order, ``null`` for failed items. ``on_item_failure``: ``fail_fast``
cancels the siblings and fails, ``continue`` succeeds, ``threshold`` needs
``min_successes``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from rein.core.failures import FailureClass
from rein.engine.run import expressions
from rein.engine.run.evaluation import diagnostic, expression_failed, value
from rein.engine.run.kinds import ladder
from rein.engine.run.kinds.fragments import (
    FragmentProblem,
    begin_container,
    bind_fragment_params,
    instance,
    model_of,
    report,
)
from rein.engine.run.outcome import NodeOutcome, succeeded
from rein.engine.run.runtime import NodeAt, ScopeInstance
from rein.engine.run.scheduler import Scheduler, ScopeResult
from rein.engine.run.signals import Paused
from rein.formats.ags.spec import NodeSpec


async def run_map(here: NodeAt, spec: NodeSpec
                  ) -> NodeOutcome:
    node = spec.raw
    state = here.state
    block = node.get("map") or {}
    key = here.key
    fragment = await begin_container(here, spec, block)
    if isinstance(fragment, NodeOutcome):
        return fragment
    scope = here.inst.scope().with_self({"id": here.nid, "attempt": 1, "inputs": state.inputs})
    items = value(here.run, scope, str(block.get("over", "[]")), f"node {here.nid} map.over")
    if not isinstance(items, list):
        diagnostic(here.run, "RT025", "error", f"map {here.nid}: over did not give an array",
                   node=key)
        return await ladder.exhausted(here, spec, None,
                                      failure=FailureClass.VALIDATION_ERROR)
    limit = int(block.get("max_items", len(items)))
    if len(items) > limit:
        if block.get("on_over_limit", "fail") == "truncate":
            diagnostic(here.run, "RT026", "warning",
                       f"map {here.nid}: {len(items)} items truncated to "
                       f"{limit}", node=key)
            items = items[:limit]
        else:
            diagnostic(here.run, "RT026", "error", f"map {here.nid}: {len(items)} items exceed "
                       f"max_items {limit}", node=key)
            return await ladder.exhausted(here, spec, None,
                                          failure=FailureClass.VALIDATION_ERROR)
    model = model_of(fragment)
    as_name = str(block.get("as", "item"))
    index_name = str(block.get("index_as", "index"))
    width = max(1, min(int(block.get("max_parallel", 1)), here.env.max_parallel_nodes))
    policy = block.get("on_item_failure", "fail_fast")
    collect: Mapping[str, str] = block.get("collect") or {}
    # What each item leaves once it ends: its result and its collected values (or the
    # error evaluating one raised, reported below in item order). Not the item's scope
    # instance, which goes when it ends, so the map holds what is in flight, not every item.
    results: list[ScopeResult | None] = [None] * len(items)
    collected: list[dict[str, tuple[Any, Exception | None]] | None] = [None] * len(items)
    stop = asyncio.Event()
    queue = iter(enumerate(items))  # items in input order; each runner takes the next one

    async def one(i: int, item: Any) -> None:
        try:
            params = bind_fragment_params(here.inst, fragment, {})
        except FragmentProblem as problem:
            report(here, problem)
            results[i] = ScopeResult(failed=True)
            return
        it = instance(here.run, here.inst, model, path=f"{key}[{i}]", params=params,
                      extra={as_name: item, index_name: i})
        results[i] = res = await Scheduler(here.run, it).run()
        if not (res.failed or res.stopped):
            collected[i] = _collect(it, collect)
        if (res.failed or res.stopped) and policy == "fail_fast":
            stop.set()

    async def runner() -> None:
        # A slot that frees starts the next item at once, in the same step; no task per
        # item waits on a semaphore, and nothing waits on hundreds of pending tasks.
        for i, item in queue:
            if stop.is_set():
                return
            await one(i, item)

    tasks = [asyncio.ensure_future(runner()) for _ in range(min(width, len(items)))]
    try:
        await _gather_fail_fast(tasks, stop if policy == "fail_fast" else None)
    except BaseException:
        # An interrupt (or an error of the store): the items stay in flight, to run again.
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    if stop.is_set():
        # fail_fast stopped the items that had not ended: a cancel, recorded as one, with
        # what an earlier process left in flight of them (a replay that adopts the failure
        # at once may not start them again).
        from rein.engine.run.stops import stop_scope

        for i, res in enumerate(results):
            if res is None:
                stop_scope(here.run, f"{key}[{i}]", "fail_fast: another item failed")
    paused = [r.paused for r in results if r is not None and r.paused]
    if paused:
        raise Paused("human" if "human" in paused else paused[0], {"node": key})
    # An item with a node stopped (fail_fast of its own, a halt) did not complete, also
    # when a replay adopts it.
    ok = [r is not None and not r.failed and not r.stopped for r in results]
    gathered: dict[str, list[Any]] = {name: [] for name in collect}
    for i, values in enumerate(collected):
        for name, expr in collect.items():
            got, error = (None, None) if values is None or not ok[i] else values[name]
            if error is not None:  # under the run's policy, as evaluating it here would be
                got = expression_failed(here.run, error, str(expr),
                                        f"node {here.nid} map.collect.{name}", default=None)
            gathered[name].append(got)
    successes = sum(ok)
    counts = {"items": len(items), "x-rein-item-successes": successes}
    if policy == "continue":
        passed = True
    elif policy == "threshold":
        passed = successes >= int(block.get("min_successes", len(items)))
    else:
        passed = successes == len(items)
    if passed:
        return succeeded(gathered, record=counts)
    diagnostic(here.run, "RUN000", "error", f"map {here.nid}: {len(items) - successes} of "
               f"{len(items)} items failed ({policy})", node=key)
    outcome = await ladder.exhausted(here, spec, None, failure=None,
                                     produced=gathered)
    return outcome.noting(**counts)


def _collect(it: ScopeInstance, collect: Mapping[str, str]
             ) -> dict[str, tuple[Any, Exception | None]]:
    """An ended item's ``collect`` values, each with the evaluation error it raised."""
    scope = it.scope()
    out: dict[str, tuple[Any, Exception | None]] = {}
    for name, expr in collect.items():
        try:
            out[name] = (expressions.evaluate(str(expr), scope), None)
        except Exception as exc:
            if not expressions.is_eval_error(exc):
                raise
            out[name] = (None, exc)
    return out


async def _gather_fail_fast(tasks: Sequence[asyncio.Future[None]],
                            stop: asyncio.Event | None) -> None:
    pending = set(tasks)
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            error = t.exception()
            if error is not None:
                raise error
        if stop is not None and stop.is_set():
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            return
