"""The scope models a process keeps (``rein.engine.run.graph.scope_model``).

A model is derived once per fragment and shared by every instance of it (each loop
iteration, each map item). A long-lived process (the app-server, the web console, a worker
of the scale-out) advances run after run, each from a freshly read graph: what it keeps of
the models of earlier advances is bounded, not one more per advance.
"""

from __future__ import annotations

import asyncio
import gc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from rein.engine.run.graph import SCOPE_MODELS_KEPT, ScopeModel, scope_model
from rein.engine.run.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore
from rein.workers.scripted import ScriptedWorker

ADVANCES = SCOPE_MODELS_KEPT + 8


def _mapped() -> dict[str, Any]:
    body = {"title": "item", "entrypoints": ["w"],
            "nodes": {"w": {"title": "work", "description": "one item"}}}
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/models",
            "title": "map", "objective": "keep few models", "requires_conformance": 3,
            "entrypoints": ["fan"],
            "params": {"xs": {"type": "array", "description": "items", "default": [1, 2]}},
            "nodes": {"fan": {"type": "map", "title": "fan", "description": "per item",
                              "map": {"over": "params.xs", "as": "x", "max_items": 2,
                                      "body": body}}}}


def _live_models() -> int:
    gc.collect()
    return sum(type(o) is ScopeModel for o in gc.get_objects())


def test_advancing_many_runs_in_one_process_keeps_a_bounded_number_of_models(
        tmp_path: Path) -> None:
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(_mapped(), sort_keys=False))
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    engine = Engine(workspace=tmp_path, store=store, env={},
                    workers=(ScriptedWorker({"nodes": {"w": [{"outputs": {}}] * 2}}),))
    before = _live_models()
    try:
        for _ in range(ADVANCES):
            prepared = prepare(path, given={}, env={})  # read afresh, as each advance does
            outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
            assert outcome.status.value == "succeeded"
    finally:
        store.close()
    # Two fragments per run (the graph and the map's body): unbounded, twice ADVANCES.
    assert _live_models() - before <= SCOPE_MODELS_KEPT


def test_a_fragment_in_use_keeps_its_one_model() -> None:
    body = {"entrypoints": ["w"], "nodes": {"w": {"title": "work"}}}
    first = scope_model(body)
    for i in range(SCOPE_MODELS_KEPT - 1):  # others come and go, fewer than are kept
        scope_model({"entrypoints": [f"n{i}"], "nodes": {f"n{i}": {"title": "x"}}})
    assert scope_model(body) is first
    assert scope_model(dict(body)) is not first  # an equal dict is another fragment



def test_threads_asking_at_once_each_get_their_fragment_s_model() -> None:
    # The web console reads records (and so models) in one thread while its loop runs the
    # engine in another: eviction is shared by both.
    def ask(worker: int) -> int:
        for i in range(4 * SCOPE_MODELS_KEPT):
            nid = f"w{worker}n{i}"
            model = scope_model({"entrypoints": [nid], "nodes": {nid: {"title": nid}}})
            assert model.entrypoints == (nid,)
        return worker

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert sorted(pool.map(ask, range(4))) == [0, 1, 2, 3]  # raises what a thread raised
