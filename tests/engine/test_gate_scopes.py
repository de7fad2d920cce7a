"""A gate inside a nested scope (a loop iteration, a map item, a subgraph's child run)
pauses the run, and each answer continues it from there: the work already done is not run
again, the scope goes on to its end, and the run after it. Continuing in the engine that
paused the run and continuing in a new one (another process, on the same store) leave the
same record and the same events."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rein.core.loops import run as run_loop
from rein.core.states import ApprovalStatus, RunStatus
from rein.engine.run.approvals import record_answer
from rein.engine.run.runner import Engine
from rein.engine.service import Harness
from rein.testing import TEST_ENV
from tests.scenarios.build import Run, graph, out, states, task


def _body() -> dict[str, Any]:
    """A scope's body: some work, then a gate on it."""
    return {"entrypoints": ["w"], "nodes": {
        "w": task("w", outputs=out("v")),
        "ok": {"type": "gate", "title": "ok", "description": "Approve.", "depends_on": ["w"],
               "gate": {"mode": "approve", "prompt": "Go on?"}}}}


def _loop() -> dict[str, Any]:
    return {"type": "loop", "title": "s", "description": "Twice.",
            "loop": {"mode": "repeat", "max_iterations": 2, "body": _body()}}


def _map() -> dict[str, Any]:
    return {"type": "map", "title": "s", "description": "Per item.",
            "map": {"over": "params.items", "as": "it", "max_items": 5,
                    "on_item_failure": "fail_fast", "body": _body()}}


def _subgraph() -> dict[str, Any]:
    return {"type": "subgraph", "title": "s", "description": "A child run.",
            "subgraph": {"inline": _body()}}


SCOPES: dict[str, tuple[Callable[[], dict[str, Any]], list[str], list[str]]] = {
    # the scope, the keys of its work, the gates it asks in order
    "loop": (_loop, ["s[0].w", "s[1].w"], ["s[0].ok", "s[1].ok"]),
    "map": (_map, ["s[0].w", "s[1].w"], ["s[0].ok", "s[1].ok"]),
    "subgraph": (_subgraph, ["w"], ["ok"]),
}


def _graph(scope: dict[str, Any]) -> dict[str, Any]:
    return graph({"pre": task("pre", outputs=out("v")), "s": {**scope, "depends_on": ["pre"]},
                  "post": task("post", outputs=out("v"), depends_on=["s"])}, ["pre"],
                 params={"items": {"type": "array", "description": "items",
                                   "default": ["a", "b"]}})


def _answers(work: list[str]) -> dict[str, Any]:
    return {key: [{"outputs": {"v": key}}] for key in ["pre", *work, "post"]}


def _fresh_engine(run: Run) -> Engine:
    """Another engine on the run's workspace and store, as another process opens it (with
    the same clock and ids, so that both records can be compared)."""
    harness = Harness(workspace=run.root, config=run.harness.config, clock=run.clock,
                      ids=run.harness.ids, env=dict(TEST_ENV), workers=(run.worker,),
                      sleep=run.sleeps)
    return harness.engine


def _answer_all(run: Run, *, fresh: bool) -> list[str]:
    """Accept what the run asks, one question at a time, continuing after each; the keys
    of the gates asked, in order."""
    asked: list[str] = []
    status = run.start().status
    for _ in range(10):  # bounded: the graphs here ask at most two questions
        if status is not RunStatus.AWAITING_HUMAN:
            break
        row = min(run.pending(), key=lambda r: r.created_at)
        asked.append(str(row.request["node"]).split("/")[-1])
        engine = _fresh_engine(run) if fresh else run.engine
        record_answer(engine.store, row, ApprovalStatus.ACCEPTED, {"actor": "ann"},
                      engine.now())
        status = run_loop(engine.proceed(run.run_id)).status
    assert status is RunStatus.SUCCEEDED
    return asked


@pytest.mark.parametrize("kind", sorted(SCOPES))
def test_a_gate_in_a_nested_scope_continues_its_scope_and_the_run(tmp_path: Path,
                                                                   kind: str) -> None:
    scope, work, gates = SCOPES[kind]
    run = Run(tmp_path, _graph(scope()), _answers(work))
    assert _answer_all(run, fresh=False) == gates
    # Each piece of work ran once: continuing ran none of it again.
    assert sorted(run.worker.calls) == sorted((key, 1) for key in ["pre", *work, "post"])
    store = run.engine.store
    ran = [run.run_id, *(child.run_id for child in store.child_runs(run.run_id))]
    assert {row.node_key: row.status.value for r in ran for row in store.nodes(r)
            if row.node_id == "ok"} == dict.fromkeys(gates, "succeeded")
    assert set(states(run.record()).values()) == {"succeeded"}
    assert run.node("post")["outputs"] == {"v": "post"}


@pytest.mark.parametrize("kind", sorted(SCOPES))
def test_continuing_in_another_engine_leaves_the_same_record(tmp_path: Path,
                                                             kind: str) -> None:
    scope, work, _ = SCOPES[kind]
    runs = []
    for where, fresh in (("same", False), ("fresh", True)):
        (tmp_path / where).mkdir()
        run = Run(tmp_path / where, _graph(scope()), _answers(work))
        _answer_all(run, fresh=fresh)
        runs.append(run)
    same, fresh = runs
    assert fresh.record() == same.record()
    assert [(e.type, e.payload) for e in fresh.engine.store.events(fresh.run_id)] == \
        [(e.type, e.payload) for e in same.engine.store.events(same.run_id)]
