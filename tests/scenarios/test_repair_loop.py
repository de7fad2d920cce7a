"""``test-repair-loop.agraph.yaml``: an until-loop with carry and collect, a conditional
body edge, escalating retries, and graph success checked by commands and an expression."""

from __future__ import annotations

import pytest

from rein.engine.run.record import record_problems
from tests.conftest import shared_path
from tests.scenarios.harness import Scenario, summary

GRAPH = shared_path("ags-examples", "test-repair-loop.agraph.yaml")
pytestmark = pytest.mark.skipif(GRAPH is None, reason="../shared is not present")

SUMMARY = "## Repair\n\n" + "The parser now handles empty input; one test was fixed.\n" * 8


def _answers(counts: list[int]) -> dict:
    nodes: dict = {
        "establish_baseline": [{"outputs": {"baseline_failures": ["tests/test_a.py::t"],
                                            "baseline_report": "1 failed"}}],
        "diagnose": [{"outputs": {"diagnosis": "parse() drops empty input",
                                  "target_files": ["src/app.py"]}}],
        # The fix writes the file: diagnose is read-only, so a write from it is refused.
        "apply_fix": [{"failure": "tool_error", "message": "patch did not apply"},
                      {"outputs": {"summary": "fixed parse()"},
                       "files": {"src/app.py": "x = 1\n"}}],
        "summarize_repair": [{"outputs": {"summary": SUMMARY},
                              "files": {"docs/internal/test-repair-summary.md": SUMMARY}}],
    }
    for i, count in enumerate(counts):
        nodes[f"repair_loop[{i}].run_tests"] = [
            {"outputs": {"failing_count": count, "report": f"{count} failed"}}]
    return {"nodes": nodes}


def test_loop_until_green_then_summarize(scenario: Scenario) -> None:
    assert GRAPH is not None
    scenario.copy(GRAPH)
    scenario.stub("pytest")
    scenario.file("src/app.py", "x = 0\n")  # the code under repair (diagnose names it)
    scenario.answers(_answers([1, 0]))
    code, out = scenario.run("test-repair-loop.agraph.yaml")
    assert (code, summary(out)["status"]) == (0, "succeeded")
    record = scenario.record()
    states = scenario.statuses(record)
    assert states["repair_loop"] == "succeeded"
    assert states["repair_loop[0].diagnose"] == "succeeded"
    assert states["repair_loop[0].apply_fix"] == "succeeded"
    assert states["repair_loop[1].diagnose"] == "skipped"
    assert states["repair_loop[1].apply_fix"] == "skipped"
    loop = next(n for n in record["nodes"] if n["node_id"] == "repair_loop")
    assert loop["iterations"] == 2
    assert loop["outputs"]["remaining_failures"] == 0
    assert loop["outputs"]["last_change"] == "no fix applied in the final iteration"
    fix = next(n for n in record["nodes"] if n.get("scope_path") == "repair_loop[0].apply_fix")
    tiers = [a["routed"]["effective_tier"] for a in fix["attempts"]]
    assert tiers == ["advanced", "frontier"]  # escalate_intelligence to escalate_to
    assert record["graph_success"]["passed"] is True
    assert record["outputs"]["remaining_failures"] == 0
    assert record_problems(record) == []


def test_max_iterations_escalates_to_a_person(scenario: Scenario) -> None:
    assert GRAPH is not None
    scenario.copy(GRAPH)
    scenario.stub("pytest")
    scenario.file("src/app.py", "x = 0\n")  # the code under repair (diagnose names it)
    scenario.answers(_answers([2, 2, 2, 2, 2]))
    code, _ = scenario.run("test-repair-loop.agraph.yaml")
    assert code == 3
    [esc] = scenario.pending()
    assert esc["kind"] == "escalation"
    assert "2 test(s) still failing" in esc["request"]["prompt"]
    # A person acknowledges without handing back outputs: the loop stays failed and the
    # run halts (policy.on_node_failure: halt).
    assert scenario.answer_all("accept") == 1
    record = scenario.record()
    states = scenario.statuses(record)
    assert states["repair_loop"] == "failed"
    assert states["summarize_repair"] == "skipped"  # its only edge is inactive
    assert record["status"] == "failed"
    assert any(d["code"] == "RT021" for d in record["diagnostics"])
    loop = next(n for n in record["nodes"] if n["node_id"] == "repair_loop")
    assert loop["escalated"] is True and loop["iterations"] == 5
    assert record_problems(record) == []
