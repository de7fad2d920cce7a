"""The engine's shape: one family of control-flow signals, one way to derive a child run's
context."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from rein.core.frozen import required
from rein.core.ids import RunId
from rein.engine.run import signals
from rein.engine.run.runtime import INHERITED, RunContext, RunEnv, RunState

ENGINE = ROOT / "src" / "rein" / "engine"

# Exceptions of the engine that are errors, not control flow: each is turned into a
# diagnostic by the code that catches it.
ERRORS = {"FragmentProblem", "RefProblem", "CriterionProblem"}


def test_every_control_flow_exception_is_a_signal() -> None:
    bare = []
    for path in sorted(ENGINE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id in ("Exception", "BaseException")
                    for b in node.bases) and node.name not in ERRORS:
                bare.append(f"{path.relative_to(ENGINE)}:{node.name}")
    assert bare == [f"{Path(signals.__file__).relative_to(ENGINE)}:Signal"]
    for name in ("Paused", "RunCancelled", "InputsMissing", "CheckpointRejected", "Blocked"):
        assert issubclass(getattr(signals, name), signals.Signal)


def _context(**overrides: Any) -> RunContext:
    values: dict[str, Any] = {name: object() for name in required(RunEnv)}
    values.update(run_id=RunId("run-1"), graph={}, policy={}, max_parallel_nodes=2)
    values.update(overrides)
    return RunContext(env=RunEnv(**values))


def test_a_child_shares_what_the_run_shares_and_starts_its_own_state() -> None:
    parent = _context()
    parent.state.diagnostics.append({"code": "RT000"})
    parent.state.budget_stop = {"message": "over"}
    child = parent.child(run_id=RunId("run-2"), graph={"id": "c"}, graph_path="c.yaml",
                         digest="sha256-c", policy={"on_node_failure": "halt"},
                         max_parallel_nodes=1)
    for name in INHERITED:
        assert getattr(child.env, name) is getattr(parent.env, name), name
    assert (child.parent, child.env.depth, child.env.run_id) == (parent, 1, "run-2")
    assert child.state == RunState() and child.state is not parent.state
    assert child.env.approved_children is None
    assert child.root() is parent


def test_a_context_is_fixed_for_its_run_and_only_its_state_changes() -> None:
    ctx = _context()
    with pytest.raises(AttributeError):
        ctx.env.run_id = RunId("run-9")  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ctx.env = ctx.env.replace()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ctx.state = RunState()  # type: ignore[misc]
    assert ctx != _context()  # compared, and hashed, as the object it is
    assert len({ctx, ctx.child(run_id=RunId("run-2"), graph={}, graph_path="c.yaml",
                               digest="sha256-c", max_parallel_nodes=1)}) == 2


def test_the_environment_and_the_run_state_are_kept_apart() -> None:
    # A run's context used to hold its dependencies and its state side by side in one
    # class of 30 fields: now the run is its environment (fixed, no state) and its state
    # (no dependency), and nothing else.
    assert set(RunContext.__fields__) == {"env", "state", "parent"}
    assert set(RunState.__fields__).isdisjoint(RunEnv.__fields__)
    assert not any("RunState" in str(t) or "RunContext" in str(t)
                   for t in RunEnv.__annotations__.values())
    assert not any("Store" in str(t) or "Worker" in str(t) or "Clock" in str(t)
                   for t in RunState.__annotations__.values())


def test_every_environment_field_is_either_shared_or_the_run_s_own() -> None:
    own = {"run_id", "graph", "graph_path", "digest", "policy", "max_parallel_nodes",
           "depth"}
    names = set(RunEnv.__fields__)
    defaulted = names - set(required(RunEnv))
    assert names - set(INHERITED) - own - defaulted == set()
    assert set(INHERITED) <= names


def _node_triples(tree: ast.AST) -> list[str]:
    """Functions whose first parameters are a run's context, a scope instance and a node id
    passed separately (``ctx, inst, nid``): the node is one value, :class:`NodeAt`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [a.arg for a in node.args.args if a.arg != "self"][:3]
            if names == ["ctx", "inst", "nid"]:
                found.append(node.name)
    return found


def test_a_node_s_steps_take_the_node_as_one_value() -> None:
    offenders = [f"{path.relative_to(ENGINE)}:{name}"
                 for path in sorted(ENGINE.rglob("*.py"))
                 for name in _node_triples(ast.parse(path.read_text(encoding="utf-8")))]
    assert offenders == []


def test_the_scan_sees_a_node_passed_in_three_parts() -> None:
    assert _node_triples(ast.parse("async def run(ctx, inst, nid, spec): pass\n"
                                   "def ok(here, spec): pass\n")) == ["run"]
