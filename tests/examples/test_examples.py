"""rein's own example graphs: clean under --strict for rein and for the reference validator,
and together they cover every node kind, criterion kind and failure-ladder rung."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ags
import pytest
from support import EXAMPLES

from rein.formats.ags import validate_path
from rein.formats.ags.plan import plan_path
from rein.formats.loader import load_path

GRAPHS = sorted(EXAMPLES.glob("*.agraph.yaml"))
WORST_CASES = {
    "driver-demo.agraph.yaml": 3,
    "incident-review.agraph.yaml": 21,
    "log-digest.agraph.yaml": 5,
    "no-worker.agraph.yaml": 30,
    "release-train.agraph.yaml": 12,
}


def test_the_examples_are_the_ones_documented() -> None:
    assert [p.name for p in GRAPHS] == sorted(WORST_CASES)
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for path in GRAPHS:
        assert f"`{path.name}`" in readme, path.name


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.name)
def test_clean_under_strict_for_rein(path: Path) -> None:
    report = validate_path(path)
    assert [f.render() for f in report.findings] == []


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.name)
def test_clean_under_strict_for_the_reference_validator(path: Path) -> None:
    report = ags.validate_path(path)
    assert [(f.code, f.message) for f in report.findings] == []


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.name)
def test_plan_has_no_notices_and_the_expected_worst_case(path: Path) -> None:
    plan = plan_path(path)
    assert plan.notices == ()  # the ref integrity pin matches, budgets fit, levels declared
    assert plan.worst_case_executions == WORST_CASES[path.name]
    assert plan.required_level <= plan.requires_conformance


# ---------------------------------------------------------------------------- coverage


def _nodes(fragment: dict[str, Any], doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of a fragment and of the fragments nested in it (named ones included)."""
    for node in (fragment.get("nodes") or {}).values():
        yield node
        kind = node.get("type", "task")
        block = node.get(kind) or {}
        for key in ("body", "inline"):
            if key in block:
                yield from _nodes(block[key], doc)
        if "use" in block:
            yield from _nodes(doc["subgraphs"][block["use"]], doc)


def _features() -> set[str]:
    seen: set[str] = set()
    for path in GRAPHS:
        doc = load_path(path).data
        successes = [doc.get("success") or {}]
        for node in _nodes(doc, doc):
            kind = node.get("type", "task")
            block = node.get(kind) or {}
            seen.add(kind)
            if kind == "decision":
                seen.add(f"decision:{block.get('evaluator', 'agent')}")
            if kind == "gate":
                seen.add(f"gate:{block['mode']}")
            if kind == "loop":
                seen.add(f"loop:{block['mode']}")
            if kind == "subgraph":
                how = next(k for k in ("use", "inline", "ref") if k in block)
                seen.add(f"subgraph:{how}")
                if how == "ref" and block["ref"].get("integrity"):
                    seen.add("subgraph:ref:integrity")
            if node.get("join") in ("any", "n_of"):
                seen.add(f"join:{node['join']}")
            failure = node.get("failure") or {}
            if (failure.get("retry") or {}).get("feedback"):
                seen.add("retry:feedback")
            seen.update(f"fallback:{f['strategy']}" for f in failure.get("fallback") or [])
            if "escalation" in failure:
                seen.add(f"escalation:{failure['escalation']['to']}")
            if "on_exhausted" in failure:
                seen.add(f"on_exhausted:{failure['on_exhausted']}")
            if "compensation" in failure:
                seen.add("compensation")
            successes.append(node.get("success") or {})
        for success in successes:
            seen.update(f"criterion:{c['kind']}" for c in success.get("criteria") or [])
        for fragment in [doc, *(doc.get("subgraphs") or {}).values()]:
            seen.update(f"edge:{e.get('kind', 'sequence')}" for e in fragment.get("edges") or [])
    return seen


REQUIRED = {
    "task", "decision", "gate", "loop", "map", "subgraph",
    "decision:agent", "decision:expression",
    "gate:approve", "gate:review", "gate:input", "gate:notify",
    "loop:while", "loop:until", "loop:repeat",
    "subgraph:use", "subgraph:inline", "subgraph:ref", "subgraph:ref:integrity",
    *(f"criterion:{k}" for k in ("command", "file_exists", "artifact_present", "human",
                                  "expression", "regex", "json_schema", "llm_judge",
                                  "external")),
    "retry:feedback",
    *(f"fallback:{s}" for s in ("alternate_node", "degrade_outputs", "relax_criteria", "skip")),
    "escalation:human", "escalation:node",
    "on_exhausted:fail", "on_exhausted:skip", "on_exhausted:escalate",
    "on_exhausted:succeed_degraded",
    "compensation", "edge:conditional", "edge:on_failure", "join:any", "join:n_of",
}


def test_examples_cover_every_kind_and_rung() -> None:
    assert REQUIRED - _features() == set()


def test_no_worker_needs_no_worker_and_no_person() -> None:
    doc = load_path(EXAMPLES / "no-worker.agraph.yaml").data
    kinds = {(n.get("type", "task"), (n.get("decision") or n.get("gate") or {}).get(
        "evaluator" if n.get("type") == "decision" else "mode")) for n in _nodes(doc, doc)}
    assert kinds == {("decision", "expression"), ("gate", "notify"), ("map", None),
                     ("loop", None), ("subgraph", None)}
    plan = plan_path(EXAMPLES / "no-worker.agraph.yaml")
    assert not any(n.calls_model for n in plan.nodes())
    assert all(g.kind == "gate" and g.mode == "notify" for g in plan.gates)
    criteria = [c.kind for n in plan.nodes() for c in n.criteria] + [
        c.kind for c in plan.graph_criteria]
    assert set(criteria) == {"expression"}
