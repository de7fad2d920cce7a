"""A node's status changes only through ``transition()``, and only as AGS §17.2 allows."""

from __future__ import annotations

import ast

import pytest
from support import ROOT

from rein.core.states import ALLOWED, IllegalTransition, NodeStatus, restore, transition
from rein.engine.run.runtime import NodeState

ENGINE = ROOT / "src" / "rein" / "engine"


def test_a_terminal_status_is_final() -> None:
    for status in NodeStatus:
        state = NodeState(status=status)
        if status.terminal:
            assert ALLOWED[status] == frozenset()
            with pytest.raises(IllegalTransition, match=f"node n: {status.value} -> running"):
                transition(state, NodeStatus.RUNNING, node="n")
            assert state.status is status


def test_the_ordinary_life_of_a_node_is_allowed() -> None:
    state = NodeState()
    for step in (NodeStatus.READY, NodeStatus.RUNNING, NodeStatus.AWAITING_HUMAN,
                 NodeStatus.RUNNING, NodeStatus.SUCCEEDED):
        transition(state, step)
    assert state.status is NodeStatus.SUCCEEDED


def test_a_pending_node_cannot_end_without_running() -> None:
    with pytest.raises(IllegalTransition):
        transition(NodeState(), NodeStatus.SUCCEEDED)
    with pytest.raises(IllegalTransition):
        transition(NodeState(status=NodeStatus.READY), NodeStatus.FAILED)


def test_restoring_takes_only_a_stored_terminal_status() -> None:
    state = NodeState(status=NodeStatus.RUNNING)
    restore(state, NodeStatus.FAILED)
    assert state.status is NodeStatus.FAILED
    with pytest.raises(IllegalTransition):
        restore(NodeState(), NodeStatus.RUNNING)
    with pytest.raises(IllegalTransition):
        restore(state, NodeStatus.SUCCEEDED)


def test_no_engine_module_assigns_a_status_itself() -> None:
    found = []
    for path in sorted(ENGINE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == "status":
                    found.append(f"{path.relative_to(ENGINE)}:{node.lineno}")
    assert found == []
