"""What a node's expressions cost, counted rather than timed: the node views they build.

An expression that names ``nodes.<id>`` reads that node's view (its status, outputs,
attempts, duration), built on demand. Each node's inputs and checks name one or two nodes,
so a run builds a bounded number of views per node, and a run of twice the nodes builds
twice the views, whatever the size of the graph. Counted by wrapping the engine's own
``NodeState.view``, so the numbers are exact and the same on every machine.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.engine.run import runtime
from rein.engine.run.expressions import EvalScope
from rein.engine.run.graph import ScopeModel
from rein.engine.run.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore
from rein.workers.scripted import ScriptedWorker

WIDTH = 10


def checked(n: int) -> dict[str, Any]:
    """``n`` tasks in layers of ten, each reading the node above it through an input and
    checked by two expressions: one on its own outputs, one on the node it read."""
    nodes: dict[str, Any] = {}
    for i in range(n):
        node: dict[str, Any] = {
            "title": f"n{i}", "description": "work",
            "outputs": {"result": {"type": "text", "description": "the note"}},
            "success": {"criteria": [
                {"id": "long", "kind": "expression", "description": "not a stub",
                 "expr": "len(self.outputs.result) > 3"}]}}
        if i >= WIDTH:
            above = f"n{i - WIDTH}"
            node["depends_on"] = [above]
            node["inputs"] = {"note": {"type": "text", "description": "the note above",
                                       "from": f"nodes.{above}.outputs.result"}}
            node["success"]["criteria"].append(
                {"id": "above", "kind": "expression", "description": "read a finished node",
                 "expr": f"nodes.{above}.status == 'succeeded'"})
        nodes[f"n{i}"] = node
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/checked",
            "title": "checked layers", "objective": "count views", "requires_conformance": 3,
            "entrypoints": [f"n{i}" for i in range(min(WIDTH, n))], "nodes": nodes}


def views_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> int:
    """Run the ``n``-node graph to success; how many node views its expressions built."""
    built = 0
    real = runtime.NodeState.view

    def counting(self: runtime.NodeState) -> dict[str, Any]:
        nonlocal built
        built += 1
        return real(self)

    graph = checked(n)
    workspace = tmp_path / str(n)
    workspace.mkdir()
    path = workspace / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    answers = {"nodes": {k: [{"outputs": {"result": "a note"}}] for k in graph["nodes"]}}
    store = SQLiteStore.open(workspace)
    assert store is not None
    engine = Engine(workspace=workspace, store=store, workers=(ScriptedWorker(answers),),
                    env={})
    prepared = prepare(path, given={}, env={})
    with monkeypatch.context() as patch:
        patch.setattr(runtime.NodeState, "view", counting)
        try:
            outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
        finally:
            store.close()
    assert outcome.status.value == "succeeded"
    return built


def test_a_run_builds_views_in_proportion_to_its_nodes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, double, triple = (views_built(tmp_path, monkeypatch, n) for n in (20, 40, 60))
    assert small > 0  # the expressions do read node views
    # Every layer after the first adds the same work, so each adds the same number of
    # views: linear, not growing with the nodes already in the scope.
    assert double - small == triple - double, (small, double, triple)
    # A few per node: the input and the check that name the node above, not every node.
    assert triple <= 4 * 60, triple


def test_naming_one_node_builds_that_node_s_view_only(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    states = {f"n{i}": runtime.NodeState(outputs={"i": i}) for i in range(1000)}
    model = ScopeModel(fragment={}, nodes={}, specs={}, edges=(), incoming={}, outgoing={},
                       rank={}, entrypoints=())
    inst = runtime.ScopeInstance(model=model, path="", params={}, roots={}, states=states)
    real = runtime.NodeState.view
    monkeypatch.setattr(runtime.NodeState, "view",
                        lambda self: built.append("view") or real(self))
    scope: EvalScope = inst.scope().with_self(
        {"id": "n5", "attempt": 1, "inputs": {}, "outputs": {"i": "now"}})
    nodes = scope.lookup("nodes")
    assert nodes["n7"]["outputs"] == {"i": 7}
    # The node's own entry reads the attempt's outputs, as `self.outputs` does.
    assert nodes["n5"]["outputs"] == {"i": "now"}
    assert nodes["self"]["id"] == "n5"
    assert "n999" in nodes and "n1000" not in nodes
    assert len(built) == 2, built
    # Seen whole, it is every node and `self`.
    assert len(nodes) == 1001 and set(nodes) == {*states, "self"}


def statements_run(tmp_path: Path, n: int) -> tuple[int, int]:
    """Run the ``n``-node graph to success; the SQL statements and the commits it made."""
    graph = checked(n)
    workspace = tmp_path / f"sql-{n}"
    workspace.mkdir()
    path = workspace / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    answers = {"nodes": {k: [{"outputs": {"result": "a note"}}] for k in graph["nodes"]}}
    store = SQLiteStore.open(workspace)
    assert store is not None
    seen: list[str] = []
    engine = Engine(workspace=workspace, store=store, workers=(ScriptedWorker(answers),),
                    env={})
    prepared = prepare(path, given={}, env={})
    store._db.set_trace_callback(seen.append)
    try:
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    finally:
        store.close()
    assert outcome.status.value == "succeeded"
    # The WAL's checkpoints run on a thread of their own, every so many commits: not a
    # node's work.
    work = [q for q in seen if not q.startswith("PRAGMA")]
    return len(work), sum(q == "COMMIT" for q in work)


def test_a_run_s_statements_and_commits_grow_with_its_nodes_only(tmp_path: Path) -> None:
    (s20, c20), (s40, c40), (s60, c60) = (statements_run(tmp_path, n) for n in (20, 40, 60))
    # Each layer of ten nodes adds the same statements and commits: linear.
    assert s40 - s20 == s60 - s40 and c40 - c20 == c60 - c40, (s20, s40, s60, c20, c40, c60)
    per_node_statements, per_node_commits = (s60 - s40) / 20, (c60 - c40) / 20
    # A node: its start with its first attempt's (one commit), then the attempt's end, the
    # node's and the edges it resolves (one more).
    assert per_node_commits <= 2, per_node_commits
    assert per_node_statements <= 10, per_node_statements
