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
from rein.engine import signals
from rein.engine.runtime import INHERITED, RunContext, RunState

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
    values: dict[str, Any] = {name: object() for name in required(RunContext)}
    values.update(run_id=RunId("run-1"), graph={}, policy={}, max_parallel_nodes=2)
    values.update(overrides)
    return RunContext(**values)


def test_a_child_shares_what_the_run_shares_and_starts_its_own_state() -> None:
    parent = _context()
    parent.state.diagnostics.append({"code": "RT000"})
    parent.state.budget_stop = {"message": "over"}
    child = parent.child(run_id=RunId("run-2"), graph={"id": "c"}, graph_path="c.yaml",
                         digest="sha256-c", policy={"on_node_failure": "halt"},
                         max_parallel_nodes=1)
    for name in INHERITED:
        assert getattr(child, name) is getattr(parent, name), name
    assert (child.parent, child.depth, child.run_id) == (parent, 1, "run-2")
    assert child.state == RunState() and child.state is not parent.state
    assert child.approved_children is None


def test_a_context_is_fixed_for_its_run_and_only_its_state_changes() -> None:
    ctx = _context()
    with pytest.raises(AttributeError):
        ctx.run_id = RunId("run-9")  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ctx.state = RunState()  # type: ignore[misc]
    assert set(RunState.__fields__).isdisjoint(RunContext.__fields__)
    assert ctx != _context()  # compared, and hashed, as the object it is
    assert len({ctx, ctx.child(run_id=RunId("run-2"), graph={}, graph_path="c.yaml",
                               digest="sha256-c", max_parallel_nodes=1)}) == 2


def test_every_context_field_is_either_shared_or_the_run_s_own() -> None:
    own = {"run_id", "graph", "graph_path", "digest", "policy", "max_parallel_nodes",
           "depth", "parent"}
    names = set(RunContext.__fields__)
    defaulted = names - set(required(RunContext))
    assert names - set(INHERITED) - own - defaulted == set()
    assert set(INHERITED) <= names
