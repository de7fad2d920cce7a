"""Effective edges, canonical topological order, parallel groups and reachability."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from plan_docs import graph, task

from rein.formats.ags.plan import build_plan, effective_edges, topological_order
from rein.formats.ags.plan_model import EdgePlan


def _edges(pairs: list[tuple[str, str]]) -> list[EdgePlan]:
    return [EdgePlan(source=a, target=b, kind="sequence") for a, b in pairs]


def test_ties_break_by_declaration_order_not_by_id() -> None:
    order, groups = topological_order(["zeta", "alpha", "mid"], [])
    assert order == ("zeta", "alpha", "mid")
    assert groups == (("zeta", "alpha", "mid"),)


def test_ready_queue_prefers_the_earliest_declared_ready_node() -> None:
    # a → b → d and a → c: after b, both c (declared 3rd) and d (4th) are ready.
    order, groups = topological_order(
        ["a", "b", "c", "d"], _edges([("a", "b"), ("b", "d"), ("a", "c")]))
    assert order == ("a", "b", "c", "d")
    assert groups == (("a",), ("b", "c"), ("d",))


def test_a_node_declared_first_but_depending_on_others_comes_later() -> None:
    order, groups = topological_order(["late", "x", "y"], _edges([("y", "late"), ("x", "y")]))
    assert order == ("x", "y", "late")
    assert groups == (("x",), ("y",), ("late",))


def test_groups_are_levels_by_longest_path() -> None:
    # x → z directly and x → y → z: z is on level 2, not 1.
    _, groups = topological_order(["x", "y", "z"], _edges([("x", "z"), ("x", "y"), ("y", "z")]))
    assert groups == (("x",), ("y",), ("z",))


def test_a_cycle_does_not_lose_nodes() -> None:
    order, groups = topological_order(["a", "b", "c"], _edges([("b", "c"), ("c", "b")]))
    assert order == ("a", "b", "c")
    assert groups[-1] == ("b", "c")


def test_effective_edges_union_and_dedupe_on_from_to_kind_when() -> None:
    doc = graph(
        {"a": task(), "b": task(depends_on=["a"]), "c": task(depends_on=["a"])},
        edges=[
            {"from": "a", "to": "b"},  # same as depends_on: collapses
            {"from": "a", "to": "b", "kind": "sequence"},  # explicit default kind: collapses
            {"from": "a", "to": "c", "kind": "conditional", "when": "true"},  # kept
            {"from": "a", "to": "c", "kind": "conditional", "when": "false"},  # kept
            {"from": "a", "to": "c", "kind": "on_failure"},  # kept
        ],
    )
    edges = effective_edges(doc)
    assert [(e.source, e.target, e.kind, e.when, e.origin) for e in edges] == [
        ("a", "b", "sequence", None, "depends_on"),
        ("a", "c", "sequence", None, "depends_on"),
        ("a", "c", "conditional", "true", "edge"),
        ("a", "c", "conditional", "false", "edge"),
        ("a", "c", "on_failure", None, "edge"),
    ]


def test_reachability_from_entrypoints() -> None:
    doc = graph({"a": task(), "b": task(depends_on=["a"]), "orphan": task(),
                 "after_orphan": task(depends_on=["orphan"])})
    plan = build_plan(doc)
    assert plan.root.unreachable == ("orphan", "after_orphan")
    assert plan.root.node("b").reachable
    assert not plan.root.node("after_orphan").reachable


def test_planning_twice_gives_the_same_json() -> None:
    doc = graph({"a": task(), "c": task(depends_on=["a"]), "b": task(depends_on=["a"])})
    assert build_plan(doc).to_json() == build_plan(doc).to_json()
    assert build_plan(doc).groups == (("a",), ("c", "b"))


@st.composite
def _dags(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str]]]:
    n = draw(st.integers(min_value=1, max_value=9))
    names = [f"n{i}" for i in draw(st.permutations(range(n)))]
    # Edges only from a lower to a higher position of a hidden permutation: always acyclic.
    hidden = draw(st.permutations(names))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                          max_size=2 * n))
    edges = [(hidden[i], hidden[j]) for i, j in pairs if i < j]
    return names, edges


@settings(max_examples=60, deadline=None)
@given(_dags())
def test_order_is_the_smallest_topological_order_by_declaration(
    dag: tuple[list[str], list[tuple[str, str]]],
) -> None:
    names, pairs = dag
    order, groups = topological_order(names, _edges(pairs))
    assert sorted(order) == sorted(names)
    preds = {n: {a for a, b in pairs if b == n} for n in names}
    placed: set[str] = set()
    for node in order:
        ready = [n for n in names if n not in placed and preds[n] <= placed]
        assert node == ready[0]  # the earliest declared among the ready nodes
        placed.add(node)
    level = {n: g for g, members in enumerate(groups) for n in members}
    for a, b in pairs:
        assert level[a] < level[b]
    for n in names:
        if level[n] > 0:
            assert any(level[p] == level[n] - 1 for p in preds[n])
    for members in groups:
        assert list(members) == sorted(members, key=names.index)
