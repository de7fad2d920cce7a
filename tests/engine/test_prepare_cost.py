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
