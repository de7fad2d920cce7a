"""What preparing and starting a graph costs besides running it, counted rather than timed:
how often the whole document is digested.

A 100,000-node graph takes a noticeable share of its run to digest (its canonical JSON is
tens of megabytes). The validator digests it once; the plan and the graph cache take that
digest rather than computing it again, and starting the run digests what it reads back to
hold it to its approval (RT053): two in all, whatever the graph's size. Counted by wrapping
the canonical serializer every digest goes through, so the number is exact.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.formats import canonical

from .helpers import make_engine
from .test_check_cost import checked


def test_a_run_digests_its_graph_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.engine.run.runner import prepare

    path = tmp_path / "g.agraph.yaml"
    graph = checked(30)
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    whole: list[int] = []
    real = canonical.canonical_json

    def counting(value: Any) -> bytes:
        if isinstance(value, dict) and value.get("id") == graph["id"]:  # the document
            whole.append(1)
        return real(value)

    monkeypatch.setattr(canonical, "canonical_json", counting)
    engine = make_engine(tmp_path, workers=_workers(graph))
    prepared = prepare(path, given={}, router=engine.router, env=engine.env)
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    engine.store.close()
    assert outcome.status.value == "succeeded"
    assert len(whole) == 2, len(whole)


def _workers(graph: dict[str, Any]) -> tuple[Any, ...]:
    from rein.workers.scripted import ScriptedWorker

    return (ScriptedWorker({"nodes": {k: [{"outputs": {"result": "a long note"}}]
                                      for k in graph["nodes"]}}),)



def collections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> list[int]:
    """Prepare and start the ``n``-node graph; the generation of each collection that
    started before its nodes began to run."""
    import gc

    from rein.engine.run import runner
    from rein.engine.run.runner import prepare

    workspace = tmp_path / str(n)
    workspace.mkdir()
    path = workspace / "g.agraph.yaml"
    graph = checked(n)
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    engine = make_engine(workspace, workers=_workers(graph))
    started: list[int] = []
    proceeding: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and not proceeding:
            started.append(info["generation"])

    real = runner.Engine.proceed

    async def proceed(self: Any, *args: Any, **kwargs: Any) -> Any:
        proceeding.append(1)  # the nodes run from here: their own work, collected as ever
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(runner.Engine, "proceed", proceed)
    was = gc.isenabled()
    gc.enable()
    gc.collect()
    gc.callbacks.append(seen)
    try:
        prepared = prepare(path, given={}, router=engine.router, env=engine.env)
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    finally:
        gc.callbacks.remove(seen)
        engine.store.close()
        if not was:
            gc.disable()
    assert outcome.status.value == "succeeded" and proceeding
    return started


def test_preparing_and_starting_a_graph_collects_a_fixed_number_of_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The document, its findings, its plan and the scope model a run schedules from are
    built with the collector paused (rein.core.collector): its passes over millions of live
    containers found nothing and took a tenth of a 100,000-node run's CPU. What is left is
    one young collection as each pause ends (moving what was built on), whatever the size;
    before, the collections grew with the graph, full ones among them."""
    import gc

    # Both above the sizes from which the pause is taken (LARGE_TEXT, LARGE_SCOPE).
    small, large = (collections(tmp_path, monkeypatch, n) for n in (600, 1200))
    assert small == large, (small, large)
    assert len(large) <= 4 and 2 not in large, large
    assert gc.isenabled()


class _Untouchable(dict):  # type: ignore[type-arg]
    """A value no walk for subgraph references may look into."""

    def get(self, *args: Any) -> Any:
        raise AssertionError("walked into a node's inputs, outputs or criteria")

    def __getitem__(self, key: Any) -> Any:
        raise AssertionError("walked into a node's inputs, outputs or criteria")

    def values(self) -> Any:
        raise AssertionError("walked into a node's inputs, outputs or criteria")


def test_the_subgraph_references_are_found_through_the_nodes_only() -> None:
    """Pinning a graph's children looks at each scope's nodes, not at every value of the
    document: at 100,000 nodes the walk over every input, output and criterion took
    seconds, twice per run (prepare, and the start's approval check)."""
    from rein.engine.run.prepare import _refs

    def ref(uri: str) -> dict[str, Any]:
        return {"type": "subgraph", "subgraph": {"ref": {"uri": uri}}}

    body = {"nodes": {"inner": ref("loop.agraph.yaml"), "plain": {"type": "task"}}}
    data = {
        "nodes": {
            "a": ref("a.agraph.yaml"),
            "work": {"type": "task", "inputs": _Untouchable(), "outputs": _Untouchable(),
                     "success": _Untouchable()},
            "again": {"type": "loop", "loop": {"body": body}},
            "fan": {"type": "map", "map": {"body": {"nodes": {"m": ref("map.agraph.yaml")}}}},
            "inline": {"type": "subgraph", "subgraph": {"inline": {
                "nodes": {"i": ref("inline.agraph.yaml")}}}},
        },
        "subgraphs": {"named": {"nodes": {"s": ref("named.agraph.yaml")}}},
        "x-notes": _Untouchable(),
    }
    assert [r["uri"] for r in _refs(data)] == [
        "a.agraph.yaml", "loop.agraph.yaml", "map.agraph.yaml", "inline.agraph.yaml",
        "named.agraph.yaml"]


@pytest.mark.parametrize("size", [600, 20])
def test_a_run_started_by_the_harness_holds_a_large_graph_out_of_the_collector_s_passes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    """While a run advances, the graph it was prepared from, its plan and its scope model
    are frozen (rein.core.collector.settled): a full collection walked all of them again,
    a twentieth of a 100,000-node run's CPU. When the start returns, nothing stays frozen. A
    small graph's run freezes nothing: a freeze keeps uncollected cycles until the last
    frozen run ends, which a server with a run always in flight would never reach."""
    import gc

    from rein.config import Config
    from rein.engine.run import runner
    from rein.engine.service import Harness

    path = tmp_path / "g.agraph.yaml"
    graph = checked(size)  # 600: above the sizes from which a pause is taken
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    seen: list[int] = []
    real = runner.Engine.proceed

    async def proceed(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_freeze_count())
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(runner.Engine, "proceed", proceed)

    async def start() -> Any:
        with Harness.open(tmp_path, Config(data={}, sources={}),
                          env={"PATH": "/usr/bin:/bin"}) as harness:
            prepared = await harness.prepare(path, given={})
            return await harness.start(prepared, approved=prepared.digest)

    assert gc.get_freeze_count() == 0
    outcome = asyncio.run(start())
    assert outcome.status.value == "waiting"  # no worker here: it waits for one
    # Each node's data, spec and state are several containers: all of them frozen.
    if size >= 500:
        assert seen and seen[0] > 10 * len(graph["nodes"]), seen
    else:
        assert seen == [0]
    assert gc.get_freeze_count() == 0
