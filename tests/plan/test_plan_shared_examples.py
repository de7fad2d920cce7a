"""The plan of the official AGS examples: worst cases, order, groups, merged defaults, notices."""

from __future__ import annotations

import pytest
from support import shared_path

from rein.formats.ags.plan import NOTICE_COST, NOTICE_LEVEL, NOTICE_WORST_CASE, plan_path

pytestmark = pytest.mark.shared

WORST_CASES = {
    "minimal.agraph.yaml": 3,
    "link-audit.agraph.yaml": 3,
    "test-repair-loop.agraph.yaml": 23,
    "library-v1-release.agraph.yaml": 24,
    "library-v1-release.agraph.json": 24,
    "docs-site-refresh.agraph.yaml": 410,
}


def _example(name: str):
    path = shared_path("ags-examples", name)
    if path is None:
        pytest.skip("../shared is not present (fresh clone)")
    return plan_path(path)


@pytest.mark.parametrize(("name", "expected"), sorted(WORST_CASES.items()))
def test_worst_case_executions(name: str, expected: int) -> None:
    plan = _example(name)
    assert plan.worst_case_executions == expected
    assert plan.to_json()["worst_case_executions"] == expected


def test_docs_site_refresh_exceeds_its_ceiling_as_a_notice() -> None:
    plan = _example("docs-site-refresh.agraph.yaml")
    over = [n for n in plan.notices if n.code == NOTICE_WORST_CASE]
    assert len(over) == 1
    assert "410" in over[0].message and "300" in over[0].message
    assert over[0].pointer == "/constraints/max_node_executions"


def test_docs_site_refresh_counts_every_nesting_level() -> None:
    plan = _example("docs-site-refresh.agraph.yaml")
    root = plan.root
    # map: 1 + 200 items × 2 attempts; ref child: 1 + (1 + 2); use fragment: 1 + (1 + 1)
    assert root.node("refresh_pages").worst_case == 401
    assert root.node("link_audit").worst_case == 4
    assert root.node("verify_and_publish").worst_case == 3
    child = root.node("link_audit").child
    assert child is not None and child.file is not None
    assert child.file.endswith("link-audit.agraph.yaml")
    assert child.order == ("crawl_links", "check_links")


def test_test_repair_loop_multiplies_iterations_and_retries() -> None:
    plan = _example("test-repair-loop.agraph.yaml")
    loop = plan.root.node("repair_loop")
    assert loop.multiplier == 5
    assert loop.child is not None
    assert loop.child.worst_case == 4  # run_tests 1 + diagnose 1 + apply_fix 2
    assert loop.worst_case == 1 + 5 * 4
    assert loop.child.node("apply_fix").attempts == 2


def test_link_audit_uses_a_feature_above_its_declared_level() -> None:
    plan = _example("link-audit.agraph.yaml")
    assert plan.requires_conformance == 1
    assert plan.required_level == 2
    [notice] = [n for n in plan.notices if n.code == NOTICE_LEVEL]
    assert notice.pointer == "/nodes/crawl_links/success/criteria/0"
    assert "expression criterion" in notice.message
    assert notice.file is None


def test_a_child_document_notice_names_its_file() -> None:
    plan = _example("docs-site-refresh.agraph.yaml")
    [notice] = [n for n in plan.notices if n.code == NOTICE_LEVEL]
    assert notice.file is not None and notice.file.endswith("link-audit.agraph.yaml")


def test_library_release_order_and_parallel_groups() -> None:
    plan = _example("library-v1-release.agraph.yaml")
    assert plan.order == (
        "audit_codebase", "define_public_api", "api_design_review", "implement_api",
        "write_test_suite", "write_documentation", "verify_quality", "release_readiness",
        "remediate_gaps", "prepare_release", "publish_approval", "publish",
    )
    assert plan.groups[3] == ("implement_api", "write_test_suite", "write_documentation")
    assert all(len(g) == 1 for i, g in enumerate(plan.groups) if i != 3)


def test_library_release_yaml_and_json_plan_identically() -> None:
    yaml_plan = _example("library-v1-release.agraph.yaml").to_json()
    json_plan = _example("library-v1-release.agraph.json").to_json()
    for data in (yaml_plan, json_plan):
        data.pop("path")
        for scope in data["scopes"]:
            scope.pop("file")
    assert yaml_plan == json_plan


def test_library_release_merges_defaults_per_block() -> None:
    plan = _example("library-v1-release.agraph.yaml")
    audit = plan.root.node("audit_codebase")
    assert audit.attempts == 2  # from defaults.failure.retry
    assert audit.effective["requirements"]["permissions"] == ["fs:read:**"]
    assert audit.effective["intelligence"]["min_context_tokens"] == 100000
    implement = plan.root.node("implement_api")
    assert implement.attempts == 3  # the node's own retry replaces the default one
    # arrays are replaced, never concatenated
    assert implement.effective["requirements"]["tools"] == [
        "file_read", "file_search", "file_write", "shell_exec"]
    # a block key the node does not set still comes from the defaults
    assert implement.effective["constraints"]["determinism"] == "relaxed"
    assert implement.effective["constraints"]["max_agent_steps"] == 60
    gate = plan.root.node("api_design_review")
    assert gate.attempts == 1 and gate.tier is None
    assert "intelligence" not in gate.effective


def test_library_release_tiers_gates_and_cost() -> None:
    plan = _example("library-v1-release.agraph.yaml")
    assert dict(plan.tiers) == {"minimal": 2, "standard": 4, "advanced": 3, "frontier": 1}
    kinds = sorted((g.kind, g.node) for g in plan.gates)
    assert kinds == [
        ("checkpoint", "implement_api"), ("checkpoint", "publish"),
        ("criterion", ""), ("gate", "api_design_review"), ("gate", "publish_approval"),
    ]
    assert plan.projected_cost_usd == pytest.approx(27.0)
    assert [n.code for n in plan.notices] == [NOTICE_COST]


def test_minimal_has_no_notices() -> None:
    plan = _example("minimal.agraph.yaml")
    assert plan.notices == ()
    assert plan.required_level == 1
    assert [c.kind for c in plan.root.node("draft_contributing").criteria] == [
        "file_exists", "command"]
