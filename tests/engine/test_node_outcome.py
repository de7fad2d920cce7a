"""A node kind returns a NodeOutcome; execute_node alone applies it to the node's state."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support import ROOT

from rein.core.states import NodeStatus
from rein.engine.run import nodes
from rein.engine.run.outcome import NodeOutcome, failed, skipped, succeeded
from rein.engine.run.record import build_record
from rein.engine.run.runtime import NodeAt
from rein.formats.ags.spec import NodeSpec
from tests.engine.helpers import make_engine, run_graph
from tests.engine.test_semantics import graph, task, write

KINDS_DIR = ROOT / "src" / "rein" / "engine" / "run" / "kinds"

# What a node's end consists of: a kind hands these back instead of writing them.
END_ATTRIBUTES = frozenset({"status", "outputs", "decision", "degraded", "unabsorbed"})
END_RECORD_FIELDS = frozenset({
    "skip_reason", "fallback_used", "x-rein-relaxed", "x-rein-stand-in",
    "x-rein-failure-class", "x-rein-blocked", "iterations", "items",
    "x-rein-item-successes", "child_run_id",
})


def _writes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in {"transition", "restore"}:
            found.append(f"{path.name}:{node.lineno} calls {node.func.id}()")
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in END_ATTRIBUTES:
                found.append(f"{path.name}:{node.lineno} sets .{target.attr}")
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) \
                    and target.value.attr == "record" \
                    and isinstance(target.slice, ast.Constant) \
                    and target.slice.value in END_RECORD_FIELDS:
                found.append(f"{path.name}:{node.lineno} sets record[{target.slice.value!r}]")
    return found


def test_no_kind_writes_the_end_of_its_node() -> None:
    found = [w for path in sorted(KINDS_DIR.glob("*.py")) for w in _writes(path)]
    assert found == []


@pytest.mark.parametrize("status", [s for s in NodeStatus if not s.terminal])
def test_an_outcome_ends_the_node(status: NodeStatus) -> None:
    with pytest.raises(ValueError, match="ends the node"):
        NodeOutcome(status=status)


def test_the_outcome_helpers_say_what_the_ladder_records() -> None:
    assert skipped("fallback: skip").record == {"skip_reason": "fallback: skip"}
    gone = failed(**{"x-rein-failure-class": "tool_error"})
    assert gone.status is NodeStatus.FAILED and gone.unabsorbed
    # A caller's context never overwrites the reason the ladder gave.
    noted = skipped("on_exhausted: skip").noting(skip_reason="other", items=2)
    assert noted.record == {"skip_reason": "on_exhausted: skip", "items": 2}
    assert succeeded({"a": 1}, decision="yes").outputs == {"a": 1}


class OutcomeKind:
    """A test double for the task kind: it reaches one outcome and touches no state."""

    def __init__(self, outcome: NodeOutcome) -> None:
        self.outcome = outcome
        self.seen: list[tuple[str, NodeStatus]] = []

    async def __call__(self, here: NodeAt, spec: NodeSpec) -> NodeOutcome:
        self.seen.append((spec.id, here.state.status))
        return self.outcome


def test_execute_node_applies_a_kinds_outcome_whole(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    double = OutcomeKind(NodeOutcome(status=NodeStatus.SUCCEEDED, outputs={"answer": 42},
                                     decision="left", degraded=True,
                                     record={"fallback_used": "skip"}))
    monkeypatch.setitem(nodes.KINDS, "task", double)  # type: ignore[arg-type]
    engine = make_engine(tmp_path)
    outcome = run_graph(engine, write(tmp_path, graph({"a": task("a")}, ["a"])))
    node = build_record(engine.store, outcome.run_id)["nodes"][0]
    assert double.seen == [("a", NodeStatus.RUNNING)]  # the kind got the typed spec
    assert node["status"] == "succeeded"
    assert node["outputs"] == {"answer": 42}
    assert node["decision"] == "left"
    assert node["x-rein-degraded"] is True
    assert node["fallback_used"] == "skip"


def test_a_kind_that_ends_its_node_itself_is_caught(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Only execute_node ends a node: a kind that wrote the status too is an engine defect,
    refused by the checked transition instead of being persisted twice."""
    from rein.core.states import IllegalTransition, transition

    async def ends_itself(here: NodeAt, spec: NodeSpec) -> NodeOutcome:
        transition(here.state, NodeStatus.SUCCEEDED)
        return succeeded({})

    monkeypatch.setitem(nodes.KINDS, "task", ends_itself)
    engine = make_engine(tmp_path)
    with pytest.raises(IllegalTransition):
        run_graph(engine, write(tmp_path, graph({"a": task("a")}, ["a"])))


def _node_and_spec(fn: object) -> tuple[str, str]:
    import inspect
    params = list(inspect.signature(fn).parameters.values())  # type: ignore[arg-type]
    return str(params[0].annotation), str(params[1].annotation)


def test_kinds_and_the_ladder_read_the_typed_spec() -> None:
    """Spec data (failure, success, requirements, title) comes from the NodeSpec with its
    AGS defaults applied, not from the raw mapping each function re-reads."""
    from rein.engine.run.kinds import fragments, ladder

    fns = [*nodes.KINDS.values(), ladder.exhausted, ladder.escalate,
           fragments.begin_container, fragments.fail_fragment]
    assert {getattr(f, "__name__", "?"): _node_and_spec(f) for f in fns} == {
        getattr(f, "__name__", "?"): ("NodeAt", "NodeSpec") for f in fns}


def test_requirements_are_checked_from_the_spec() -> None:
    from rein.engine.run.permissions import check_requirements
    from rein.formats.ags.spec import node_spec
    from rein.profiles.policy import Policy

    spec = node_spec("a", {"title": "a", "requirements": {"mcp_servers": ["docs"]}})
    assert spec.requirements.mcp_servers == ("docs",)
    refusal = check_requirements(spec, Policy.from_mapping({}), ())
    assert refusal is not None and refusal.code == "RT012"
    assert "MCP server 'docs'" in refusal.message
