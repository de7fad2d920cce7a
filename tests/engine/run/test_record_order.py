"""A run record does not depend on the order parallel work happened to end in.

Two uninterrupted runs of a graph with a map beside a loop, whose work ends in opposite
orders, write the same record once ids and times are set aside: nodes, edges taken and
diagnostics in the graph's order (topological, ties by declaration order; a container
followed by what ran inside it, by index).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.core.states import RunStatus
from rein.engine.run.record import build_record
from rein.workers.base import AttemptRequest, AttemptResult, Item
from rein.workers.scripted import ScriptedWorker
from tests.durability.support import normalized
from tests.scenarios.build import Run, graph, task

LOOKS = 10_000  # turns of the event loop an attempt waits for its turn


class InTurn:
    """A test double in front of the scripted worker: attempts answer in the order
    ``turns`` lists their nodes (each waits until those before it have answered)."""

    name = "scripted"
    deterministic = True

    def __init__(self, answers: Mapping[str, Any], turns: Sequence[str]) -> None:
        self.inner = ScriptedWorker({"nodes": dict(answers)})
        self.turns = list(turns)
        self.done: list[str] = []

    def can_serve(self, request: AttemptRequest) -> bool:
        return self.inner.can_serve(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        before = self.turns[:self.turns.index(request.node_id)]
        for _ in range(LOOKS):
            if set(before) <= set(self.done):
                break
            await asyncio.sleep(0)
        async for step in self.inner.run(request):
            if isinstance(step, AttemptResult):
                self.done.append(request.node_id)  # the caller stops reading at the result
            yield step


BODY = {"entrypoints": ["a"], "nodes": {
    # Answers a label it was not offered: an RT022 warning of this node in every instance.
    "a": {"type": "decision", "title": "a", "description": "Choose.",
          "decision": {"question": "Which?", "default_branch": "go",
                       "branches": [{"label": "go", "description": "Go."}]}},
    "b": task("b", depends_on=["a"], when="params.way == 'nowhere'"),  # skipped
    "c": task("c", depends_on=["a"]),
}}
SIDE_BY_SIDE = graph({
    "fan": {"type": "map", "title": "fan", "description": "Fan out.",
            "map": {"over": "[1, 2]", "as": "it", "max_items": 5, "max_parallel": 1,
                    "body": BODY}},
    "again": {"type": "loop", "title": "again", "description": "Again.",
              "loop": {"mode": "repeat", "max_iterations": 2, "body": BODY}},
    "end": task("end", depends_on=["fan", "again"]),
}, ["fan", "again"], constraints={"max_parallel_nodes": 2},
    params={"way": {"type": "string", "description": "way", "default": "here"}})
FAN = ["fan[0].a", "fan[0].c", "fan[1].a", "fan[1].c"]
AGAIN = ["again[0].a", "again[0].c", "again[1].a", "again[1].c"]
ANSWERS = {"a": [{"decision": "elsewhere", "outputs": {}}], "c": [{"outputs": {}}],
           "end": [{"outputs": {}}]}


def _record(root: Path, turns: Sequence[str]) -> dict[str, Any]:
    run = Run(root, SIDE_BY_SIDE, ANSWERS)
    worker = InTurn(ANSWERS, [*turns, "end"])
    run.engine.workers = (worker,)
    assert run.start().status is RunStatus.SUCCEEDED
    assert worker.done == [*turns, "end"]  # the work did end in this order
    return build_record(run.engine.store, run.run_id)


def test_two_runs_whose_parallel_work_ends_in_other_orders_write_one_record(
        tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = _record(tmp_path / "one", [*FAN, *AGAIN])
    two = _record(tmp_path / "two", [*AGAIN, *FAN])
    assert normalized(one) == normalized(two)
    assert [n.get("scope_path", n["node_id"]) for n in one["nodes"]] == [
        "fan", "fan[0].a", "fan[0].b", "fan[0].c", "fan[1].a", "fan[1].b", "fan[1].c",
        "again", "again[0].a", "again[0].b", "again[0].c",
        "again[1].a", "again[1].b", "again[1].c", "end"]
    assert [(e.get("x-rein-scope", ""), e["from"], e["to"]) for e in one["edges_taken"]] == [
        ("", "fan", "end"), ("", "again", "end"),
        ("fan[0]", "a", "b"), ("fan[0]", "a", "c"), ("fan[1]", "a", "b"), ("fan[1]", "a", "c"),
        ("again[0]", "a", "b"), ("again[0]", "a", "c"),
        ("again[1]", "a", "b"), ("again[1]", "a", "c")]
    assert [(d["code"], d["node_id"]) for d in one["diagnostics"]] == [
        ("RT022", key) for key in ("fan[0].a", "fan[1].a", "again[0].a", "again[1].a")]
