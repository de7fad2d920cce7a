"""Defaults merging, the worst case through nesting, subgraph references and notices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plan_docs import fragment, graph, retry, task

from rein.formats.ags import plan as planner
from rein.formats.ags.plan import build_plan, effective_node, plan_path
from rein.formats.canonical import ags_digest

# ---------------------------------------------------------------------------- defaults


def test_node_block_keys_win_and_missing_keys_come_from_defaults() -> None:
    defaults = {"failure": {"retry": {"max_attempts": 3}, "on_exhausted": "skip"},
                "constraints": {"max_agent_steps": 10, "max_cost_usd": 1.0}}
    node = task(failure={"escalation": {"to": "human"}}, constraints={"max_agent_steps": 4})
    eff = effective_node(node, defaults)
    assert eff["failure"] == {"retry": {"max_attempts": 3}, "on_exhausted": "skip",
                              "escalation": {"to": "human"}}
    assert eff["constraints"] == {"max_agent_steps": 4, "max_cost_usd": 1.0}


def test_a_node_retry_replaces_the_default_retry_wholesale() -> None:
    defaults = {"failure": {"retry": {"max_attempts": 3, "backoff": "fixed"}}}
    eff = effective_node(task(failure={"retry": {"max_attempts": 1}}), defaults)
    assert eff["failure"]["retry"] == {"max_attempts": 1}


def test_arrays_and_human_are_replaced_not_concatenated() -> None:
    defaults = {"requirements": {"tools": ["file_read"], "network": "none"},
                "human": [{"at": "before_start", "mode": "notify"}], "join": "any"}
    node = task(requirements={"tools": ["shell_exec"]},
                human=[{"at": "after_outputs", "mode": "review"}])
    eff = effective_node(node, defaults)
    assert eff["requirements"] == {"tools": ["shell_exec"], "network": "none"}
    assert eff["human"] == [{"at": "after_outputs", "mode": "review"}]
    assert eff["join"] == "any"
    assert node["requirements"] == {"tools": ["shell_exec"]}  # the document is not changed


def test_gates_do_not_inherit_intelligence() -> None:
    gate = {"type": "gate", "title": "g", "description": "g", "gate": {"mode": "approve"}}
    eff = effective_node(gate, {"intelligence": {"tier": "frontier"}})
    assert "intelligence" not in eff


def test_root_defaults_stop_at_fragments_and_fragment_defaults_apply_inside() -> None:
    body = fragment({"inner": task(), "tuned": task(failure=retry(5))},
                    defaults={"failure": retry(2)})
    plain = fragment({"inner": task()})
    doc = graph(
        {"outer": task(),
         "loop": task(type="loop", loop={"mode": "repeat", "max_iterations": 2, "body": body}),
         "map": task(type="map", map={"over": "[]", "as": "x", "max_items": 3, "body": plain})},
        defaults={"failure": retry(3), "intelligence": {"tier": "advanced"}},
    )
    root = build_plan(doc).root
    assert root.node("outer").attempts == 3
    assert root.node("outer").tier == "advanced"
    loop = root.node("loop")
    assert loop.attempts == 3  # the container itself is a root node
    assert loop.child is not None
    assert loop.child.node("inner").attempts == 2  # fragment defaults, not root defaults
    assert loop.child.node("tuned").attempts == 5
    assert loop.child.node("inner").tier == "standard"  # root intelligence stops here
    mapped = root.node("map").child
    assert mapped is not None and mapped.node("inner").attempts == 1


# ---------------------------------------------------------------------------- worst case


def test_worst_case_multiplies_through_every_level() -> None:
    # map (≤4 items) of a loop (≤3 iterations, 2 attempts) of a task with 2 attempts,
    # inside an inline subgraph retried twice.
    loop = task(type="loop", failure=retry(2),
                loop={"mode": "repeat", "max_iterations": 3,
                      "body": fragment({"work": task(failure=retry(2))})})
    mapped = task(type="map", map={"over": "[]", "as": "x", "max_items": 4,
                                   "body": fragment({"loop": loop})})
    sub = task(type="subgraph", failure=retry(2),
               subgraph={"inline": fragment({"map": mapped, "gate": {
                   "type": "gate", "title": "g", "description": "g", "failure": retry(9),
                   "gate": {"mode": "notify"}}})})
    plan = build_plan(graph({"sub": sub}))
    loop_wc = 2 * (1 + 3 * 2)  # 14
    map_wc = 1 + 4 * loop_wc  # 57
    assert plan.worst_case_executions == 2 * (1 + map_wc + 1)  # gates count once: 118
    assert [s.depth for s in plan.scopes()] == [0, 1, 2, 3]


def test_named_fragments_are_planned_at_each_use() -> None:
    doc = graph({"a": task(type="subgraph", subgraph={"use": "pair"}),
                 "b": task(type="subgraph", subgraph={"use": "pair"}, depends_on=["a"])},
                subgraphs={"pair": fragment({"x": task(failure=retry(2)),
                                             "y": task(depends_on=["x"])})})
    plan = build_plan(doc)
    assert plan.worst_case_executions == 2 * (1 + 3)
    assert [s.path for s in plan.scopes()] == ["", "a", "b"]
    assert plan.root.node("a").child_label == "use pair"


def test_recursive_fragments_are_cut_with_a_notice() -> None:
    doc = graph({"a": task(type="subgraph", subgraph={"use": "again"})},
                subgraphs={"again": fragment({"self_use": task(type="subgraph",
                                                               subgraph={"use": "again"})})})
    plan = build_plan(doc)
    assert [n.code for n in plan.notices] == [planner.NOTICE_RECURSION]
    assert plan.worst_case_executions == 2


# ---------------------------------------------------------------------------- references


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _child() -> dict:
    return graph({"c1": task(failure=retry(3)), "c2": task(depends_on=["c1"])},
                 id="test/child")


def _parent(ref: dict) -> dict:
    return graph({"call": task(type="subgraph", subgraph={"ref": ref})})


def test_a_relative_ref_resolves_next_to_the_referencing_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    child = _write(tmp_path / "sub" / "child.agraph.json", _child())
    parent = _write(tmp_path / "parent.agraph.json", _parent({
        "uri": "./sub/child.agraph.json", "integrity": ags_digest(_child()),
        "expected_id": "test/child"}))
    plan = plan_path(parent)
    assert plan.notices == ()
    assert plan.worst_case_executions == 1 + 4
    scope = plan.root.node("call").child
    assert scope is not None and scope.file == str(child.parent / "child.agraph.json")


def test_a_ref_that_does_not_match_its_pin_is_a_notice(tmp_path: Path) -> None:
    _write(tmp_path / "child.agraph.json", _child())
    parent = _write(tmp_path / "parent.agraph.json", _parent({
        "uri": "child.agraph.json", "integrity": "sha256-AAAA", "expected_id": "test/other"}))
    notices = plan_path(parent).notices
    assert [n.code for n in notices] == [planner.NOTICE_INTEGRITY] * 2
    assert "RT051" in notices[0].message and "RT052" in notices[1].message
    assert notices[0].pointer == "/nodes/call/subgraph/ref"


@pytest.mark.parametrize("uri", ["./missing.agraph.json", "https://example.org/x.agraph.json"])
def test_an_unplanned_ref_makes_the_worst_case_a_lower_bound(tmp_path: Path, uri: str) -> None:
    parent = _write(tmp_path / "parent.agraph.json", _parent({"uri": uri}))
    plan = plan_path(parent)
    assert plan.worst_case_executions == 1
    [notice] = plan.notices
    assert notice.code == planner.NOTICE_REF and "lower bound" in notice.message


def test_ref_loading_can_be_turned_off_or_injected() -> None:
    doc = _parent({"uri": "anything"})
    assert [n.code for n in build_plan(doc, load_ref=None).notices] == [planner.NOTICE_REF]
    seen: list[tuple[str, str | None]] = []

    def loader(uri: str, base: str | None) -> tuple[dict, str]:
        seen.append((uri, base))
        return _child(), "memory:child"

    plan = build_plan(doc, source="memory:parent", load_ref=loader)
    assert seen == [("anything", "memory:parent")]
    assert plan.worst_case_executions == 5
    assert plan.notices == ()


def test_a_document_that_references_itself_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "self.agraph.json"
    _write(path, _parent({"uri": "./self.agraph.json"}))
    plan = plan_path(path)
    assert [n.code for n in plan.notices] == [planner.NOTICE_RECURSION]


# ---------------------------------------------------------------------------- notices


def test_budget_notices() -> None:
    doc = graph(
        {"a": task(estimate={"cost_usd": 2.5, "tokens": 9000}),
         "b": task(depends_on=["a"], failure=retry(4), estimate={"cost_usd": 1})},
        constraints={"max_cost_usd": 3.0, "max_total_tokens": 5000, "max_node_executions": 4,
                     "max_subgraph_depth": 1},
    )
    plan = build_plan(doc)
    assert plan.projected_cost_usd == 3.5
    assert plan.projected_tokens == 9000
    assert [n.code for n in plan.notices] == [
        planner.NOTICE_WORST_CASE, planner.NOTICE_COST, planner.NOTICE_TOKENS]
    assert "5 node executions" in plan.notices[0].message


def test_within_budget_there_are_no_notices() -> None:
    doc = graph({"a": task(estimate={"cost_usd": 1})},
                constraints={"max_cost_usd": 1.0, "max_node_executions": 1})
    assert build_plan(doc).notices == ()


def test_a_container_estimate_stands_for_its_body() -> None:
    body = fragment({"x": task(estimate={"cost_usd": 7})})
    doc = graph({
        "with_own": task(type="loop", estimate={"cost_usd": 2},
                         loop={"mode": "repeat", "max_iterations": 9, "body": body}),
        "without": task(type="subgraph", subgraph={"inline": body}),
    })
    assert build_plan(doc).projected_cost_usd == 2 + 7


def test_nesting_deeper_than_allowed_is_a_notice() -> None:
    inner = task(type="subgraph", subgraph={"inline": fragment({"x": task()})})
    doc = graph({"outer": task(type="subgraph", subgraph={"inline": fragment({"i": inner})})},
                constraints={"max_subgraph_depth": 1})
    [notice] = build_plan(doc).notices
    assert notice.code == planner.NOTICE_DEPTH and "2 deep" in notice.message


def test_features_above_the_declared_level_are_one_notice_each() -> None:
    crit = {"id": "c", "kind": "expression", "description": "d", "expr": "true"}
    doc = graph(
        {"a": task(success={"criteria": [crit]}),
         "b": task(depends_on=["a"], success={"criteria": [crit]}, join="any"),
         "d": {"type": "decision", "title": "d", "description": "d", "depends_on": ["b"],
               "decision": {"evaluator": "expression",
                            "branches": [{"label": "x", "description": "x", "when": "true"}]}}},
        requires_conformance=1,
    )
    plan = build_plan(doc)
    assert plan.required_level == 2
    messages = {n.pointer: n.message for n in plan.notices}
    assert set(messages) == {"/nodes/a/success/criteria/0", "/nodes/b/join", "/nodes/d"}
    assert "(2 uses)" in messages["/nodes/a/success/criteria/0"]
    assert build_plan({**doc, "requires_conformance": 2}).notices == ()


def test_tiers_count_only_nodes_that_call_a_model() -> None:
    doc = graph({
        "t": task(intelligence={"tier": "frontier"}),
        "plain": task(),
        "agent": {"type": "decision", "title": "d", "description": "d",
                  "decision": {"branches": [{"label": "x", "description": "x"}]}},
        "expr": {"type": "decision", "title": "d", "description": "d",
                 "intelligence": {"tier": "advanced"},
                 "decision": {"evaluator": "expression",
                              "branches": [{"label": "x", "description": "x", "when": "true"}]}},
        "g": {"type": "gate", "title": "g", "description": "g", "gate": {"mode": "notify"}},
    }, entrypoints=["t", "plain", "agent", "expr", "g"])
    plan = build_plan(doc)
    assert dict(plan.tiers) == {"minimal": 0, "standard": 2, "advanced": 0, "frontier": 1}
    assert plan.root.node("g").tier is None
