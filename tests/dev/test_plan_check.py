"""rein's check of a feature plan: each refusal says its own reason (iao.md weak point 4),
nothing is cut silently, and the build order is the picker's (dependencies, then priority).
"""

from __future__ import annotations

from typing import Any

import pytest

from rein.dev.plan_check import build_order, check_plan

V = "python -m pytest -q"


def plan(*features: dict[str, Any], verify: Any = V) -> dict[str, Any]:
    return {"verify": verify, "features": list(features)}


def f(fid: str, *, priority: int = 1, deps: tuple[str, ...] = (), **more: Any
      ) -> dict[str, Any]:
    return {"id": fid, "title": f"Feature {fid}", "priority": priority,
            "depends_on": list(deps), **more}


@pytest.mark.parametrize(("data", "reason"), [
    ({"features": []}, 'non-empty "features" list'),
    ("not a plan", 'non-empty "features" list'),
    (plan(f("a"), f("a")), "feature id 'a' is used 2 times; ids must be unique"),
    (plan(f("a", deps=("ghost",))), "feature 'a' depends on 'ghost', which is not in the plan"),
    (plan(f("a", deps=("b",)), f("b", deps=("c",)), f("c", deps=("a",))),
     "the dependencies form a cycle through a, b, c"),
    (plan(f("a", deps=("a",))), "feature 'a' depends on itself"),
    (plan(f("a", priority=0)), "priority must be a whole number of at least 1"),
    (plan({"id": "a", "title": " "}), "feature 'a' needs a non-empty title"),
    (plan({"id": "Bad Id!", "title": "x"}), "needs an id of lowercase letters"),
    (plan(f("a", description="x" * 2001)), "the description has 2001 characters; at most 2000"),
    (plan(f("a", context={"requirements": ["x" * 4001]})), "at most 4000"),
    (plan(f("a", context={"notes": ["x"]})), "context has unknown key(s) notes"),
    (plan(f("a"), verify=None), "no verify command for feature(s) a"),
    (plan(f("a"), verify="$VERIFY_CMD"), "placeholder that was never filled in"),
    (plan(f("a"), verify="true"), "'true' checks nothing"),
    (plan(f("a"), verify="echo PASS"), "'echo' checks nothing"),
    (plan(f("a"), verify="pytest && echo ok"), "it needs a shell"),
    (plan(f("a"), verify=["bash", "-c", "pytest"]), "'bash -c' runs a shell string"),
    (plan(f("a"), verify=["pytest", "tests/a.py\0"]), "an argument holds a NUL character"),
    (plan(f("a", title="Half \ud83d")), "holds an unpaired surrogate escape"),
])
def test_each_refusal_says_its_reason(data: Any, reason: str) -> None:
    checked = check_plan(data)
    assert checked.problems, data
    assert any(reason in p for p in checked.problems), checked.problems


def test_what_rein_spec_records_of_its_sources_is_not_checked_as_text() -> None:
    sources = {"specs/br\udcffief.md": "sha256:0"}  # a brief whose name is not UTF-8
    assert not check_plan({**plan(f("a")), "spec": {"sources": sources}}).problems


def test_a_plan_over_the_cap_is_refused_with_the_cap_not_cut() -> None:
    checked = check_plan(plan(*(f(f"f{i}") for i in range(4))), max_features=3)
    assert checked.problems == (("the plan has 4 features; at most 3 are accepted ([dev] "
                                "max_features): merge small ones or plan in stages"),)


def test_build_order_is_ready_features_by_priority_then_id() -> None:
    checked = check_plan(plan(f("table", priority=1, deps=("c_to_f", "f_to_c")),
                              f("f_to_c", priority=2), f("c_to_f", priority=3),
                              f("b_help", priority=2)))
    assert not checked.problems
    assert [x.id for x in checked.features] == ["b_help", "f_to_c", "c_to_f", "table"]
    assert build_order(checked.features) == list(checked.features)


def test_iao_feature_list_imports_with_its_own_keys() -> None:
    data = {"items": [
        {"id": 1, "title": "Parse", "priority": 1, "passes": False, "dependsOn": None,
         "implementationContext": {"requirements": ["r"], "files": ["a.py"]}},
        {"id": 2, "title": "Print", "priority": 1, "dependsOn": [1],
         "implementationContext": "one string, an old plan"}], "verify": V}
    checked = check_plan(data)
    assert not checked.problems
    assert [(x.id, x.depends_on) for x in checked.features] == [("1", ()), ("2", ("1",))]
    assert checked.features[1].context == {"requirements": ("one string, an old plan",)}
    assert checked.features[0].node_id == "feature_1"
