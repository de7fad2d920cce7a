"""What a map holds while it runs: the items in flight, not every item that ended.

Counted, not measured: the scope instances of the items still alive (reachable) when the
last item starts, and the events a run leaves waiting in one open transaction.
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.engine.run.kinds import map as map_kind
from rein.engine.run.runner import Engine, prepare
from rein.engine.run.runtime import ScopeInstance
from rein.store.sqlite import SQLiteStore

WIDTH = 4


def mapped(items: int) -> dict[str, Any]:
    """A map of ``items`` expression decisions (no worker), ``WIDTH`` at a time, collecting
    each item's decision."""
    decide = {"type": "decision", "title": "parity", "description": "even or odd",
              "decision": {"evaluator": "expression", "default_branch": "odd", "branches": [
                  {"label": "even", "description": "even", "when": "x % 2 == 0"},
                  {"label": "odd", "description": "odd", "when": "x % 2 == 1"}]}}
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/map-memory",
            "title": "a map", "objective": "count what it holds", "requires_conformance": 3,
            "constraints": {"max_parallel_nodes": WIDTH},
            "params": {"xs": {"type": "array", "description": "the items",
                              "default": list(range(items))}},
            "entrypoints": ["fan"],
            "nodes": {"fan": {"type": "map", "title": "fan", "description": "one per item",
                              "map": {"over": "params.xs", "as": "x", "max_items": items,
                                      "max_parallel": WIDTH,
                                      "collect": {"parity": "nodes.d.outputs.decision"},
                                      "body": {"title": "item", "entrypoints": ["d"],
                                               "nodes": {"d": decide}}}}}}


def test_a_map_holds_the_items_in_flight_only(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    items = 200
    made: list[str] = []
    alive_at_last: list[int] = []
    real = map_kind.instance

    def counting(*args: Any, **kwargs: Any) -> Any:
        it = real(*args, **kwargs)
        made.append(it.path)
        if len(made) == items:  # every item scope still reachable, this one included
            gc.collect()
            alive_at_last.append(sum(1 for o in gc.get_objects()
                                     if type(o) is ScopeInstance and o.path.startswith("fan[")))
        return it

    monkeypatch.setattr(map_kind, "instance", counting)
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(mapped(items), sort_keys=False))
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    engine = Engine(workspace=tmp_path, store=store, workers=(), env={})
    prepared = prepare(path, given={}, env={})
    try:
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
        [fan] = [r for r in store.nodes(outcome.run_id) if r.node_key == "fan"]
    finally:
        store.close()
    assert outcome.status.value == "succeeded"
    # What each item collected is still there, in item order.
    assert fan.record["outputs"]["parity"] == ["even", "odd"] * (items // 2)
    # The last item and those still running beside it; every item that ended is gone.
    assert len(made) == items and alive_at_last[0] <= WIDTH, alive_at_last
