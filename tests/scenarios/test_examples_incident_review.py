"""``examples/incident-review.agraph.yaml`` run end to end through the command line with
the scripted worker (a test double), its ``log-digest`` child run by ``ref``, the input gate
and the owner's sign-off answered with ``rein approvals``, and a test checker registered
for its ``external`` criterion. The failure ladder: ``alternate_node``, ``relax_criteria``,
``degrade_outputs``; and, with no checker registered, escalation to the ``hand_off`` node."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from rein.engine.run.criteria.model import CheckRequest
from rein.engine.run.record import record_problems
from rein.engine.service import Harness
from tests.conftest import EXAMPLES
from tests.scenarios.harness import Scenario

GRAPH = EXAMPLES / "incident-review.agraph.yaml"
CHILD = EXAMPLES / "log-digest.agraph.yaml"
FIXTURES = Path(__file__).parent / "fixtures" / "examples"
FACTS = ["notes=Alerts fired at 01:00; api-3 restarted at 01:09.",
         "started_at=01:00", "severity=sev2"]


REVIEW = yaml.safe_load((FIXTURES / "incident-review.answers.yaml").read_text())[
    "nodes"]["draft_review"][0]["outputs"]["review"]


def markdown_sections(request: CheckRequest) -> bool:
    """The test's ``markdown_sections`` checker: every named level-two heading, in order."""
    found = re.findall(r"^## (.+)$", str(request.outputs.get("review") or ""), re.MULTILINE)
    wanted = list(request.params["sections"])
    return [h for h in found if h in wanted] == wanted


def _register(scenario: Scenario, checkers: dict[str, Any]) -> None:
    """Give every Harness the command line opens these checkers (no rein.toml key names an
    external checker: a harness registers them in code)."""
    opened = Harness.open

    def with_checkers(*args: Any, **kwargs: Any) -> Any:
        return opened(*args, **{**kwargs, "checkers": checkers})

    scenario.monkeypatch.setattr(Harness, "open", with_checkers)


def _node(record: dict[str, Any], key: str) -> dict[str, Any]:
    return next(n for n in record["nodes"] if n.get("scope_path", n["node_id"]) == key)


def _setup(scenario: Scenario, **changes: Any) -> None:
    scenario.copy(GRAPH)
    scenario.copy(CHILD)
    scenario.file("logs/api.log", "01:02 error: connection pool exhausted\n")
    script = yaml.safe_load((FIXTURES / "incident-review.answers.yaml").read_text())
    script["nodes"].update(changes)
    scenario.answers(script)


def _gather_facts(scenario: Scenario) -> int:
    [gate] = scenario.pending()
    assert (gate["kind"], gate["request"]["node"]) == ("gate", "gather_facts")
    values = [arg for fact in FACTS for arg in ("--value", fact)]
    code, _ = scenario.rein("approvals", "accept", gate["approval_id"], "--json", *values)
    return code


GOOD = {"outputs": {"review": REVIEW, "action_items": [{"title": "Cap client retries",
                                                          "team": "api"}]}}


def _run(scenario: Scenario, checkers: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """Run the review for INC-42: the facts gate, then the owner's sign-off when asked."""
    _setup(scenario, **changes)
    _register(scenario, checkers)
    code, out = scenario.run(GRAPH.name, "--param", "incident_id=INC-42")
    assert code == 3, out  # the input gate asks first
    assert _gather_facts(scenario) == 3  # then the graph-level human criterion
    [signoff] = scenario.pending()
    assert (signoff["kind"], signoff["request"]["criterion"]) == ("criterion", "owner_accepts")
    assert scenario.answer_all("accept") == 0
    record = scenario.record()
    assert record_problems(record) == []
    assert record["status"] == "succeeded"
    child = scenario.record(_node(record, "digest_logs")["child_run_id"])
    assert record_problems(child) == []
    assert (child["graph_id"], child["status"]) == ("rein/examples/log-digest", "succeeded")
    return record


COMMON = {
    "gather_facts": "succeeded", "digest_logs": "succeeded",
    "find_root_cause": "succeeded",
    "find_root_cause[0].hypothesize": "succeeded",  # relax_criteria
    "find_root_cause[1].hypothesize": "succeeded",  # confident: the while loop stops
    "build_timeline": "succeeded",  # by its alternate node
    "build_timeline~timeline_from_notes": "succeeded",
    "timeline_from_notes": "skipped",  # the on_failure edge: build_timeline did not fail
    "file_it": "succeeded", "notify_owner": "succeeded",
}


def _results(node: dict[str, Any]) -> list[dict[str, bool]]:
    return [{r["id"]: r["passed"] for r in a["success"]["results"]} for a in node["attempts"]]


def test_the_ladder_carries_the_review_to_a_signed_off_filing(scenario: Scenario) -> None:
    broken = {**GOOD["outputs"], "review": REVIEW.replace("## Impact", "## Effect")}
    record = _run(scenario, {"markdown_sections": markdown_sections},
                  draft_review=[{"outputs": broken}, GOOD])
    assert scenario.statuses(record) == {**COMMON, "draft_review": "succeeded",
                                         "hand_off": "skipped"}
    # alternate_node: both attempts missed the start time; the notes-only timeline stands in.
    timeline = _node(record, "build_timeline")
    assert [a["status"] for a in timeline["attempts"]] == ["criteria_failed"] * 2
    assert timeline["x-rein-stand-in"] == "build_timeline~timeline_from_notes"
    assert timeline["outputs"] == {"timeline": "- 01:00 alerts fire (notes, unverified)\n"}
    # relax_criteria: the first hypothesis names no mechanism and still counts.
    first = _node(record, "find_root_cause[0].hypothesize")
    assert first["x-rein-relaxed"] == ["cites_mechanism"]
    assert _node(record, "find_root_cause[1].hypothesize")["inputs"] == {
        "previous": "The connection pool ran dry."}  # carry
    assert _node(record, "find_root_cause")["iterations"] == 2
    # The external checker judged both drafts; the retry fixed the missing section.
    assert _results(_node(record, "draft_review")) == [
        {"sections": False, "actions_shaped": True, "blameless": True},
        {"sections": True, "actions_shaped": True, "blameless": True}]
    assert record["outputs"]["action_items"] == [{"title": "Cap client retries",
                                                  "team": "api"}]
    assert record["outputs"]["filed_at"] == "reviews/INC-42.md"
    assert (scenario.root / "reviews" / "INC-42.md").read_text() == REVIEW


def test_with_no_checker_registered_the_review_ships_degraded(scenario: Scenario) -> None:
    record = _run(scenario, {}, draft_review=[GOOD])
    assert scenario.statuses(record) == {**COMMON, "draft_review": "succeeded",
                                         "hand_off": "skipped"}
    draft = _node(record, "draft_review")
    # A missing checker fails the criterion rather than skipping it, on every attempt...
    assert [r["sections"] for r in _results(draft)] == [False, False]
    # ...and degrade_outputs keeps the review alone.
    assert draft["outputs"] == {"review": REVIEW}
    assert "action_items" not in record["outputs"]


def test_a_draft_that_cannot_be_written_escalates_to_the_hand_off(scenario: Scenario) -> None:
    _setup(scenario, draft_review=[{"failure": "tool_error", "message": "editor crashed"}])
    _register(scenario, {"markdown_sections": markdown_sections})
    code, out = scenario.run(GRAPH.name, "--param", "incident_id=INC-42")
    assert code == 3, out
    assert _gather_facts(scenario) == 3
    code = scenario.answer_all("accept")  # the owner's sign-off
    record = scenario.record()
    assert record_problems(record) == []
    assert scenario.statuses(record) == {
        **COMMON,
        "draft_review": "succeeded",  # on_exhausted: escalate, to the hand_off node
        "draft_review~hand_off": "succeeded",
        "hand_off": "skipped",  # the on_failure edge: draft_review did not fail
        "file_it": "skipped",  # no review to file: the skip fallback
        "notify_owner": "skipped",
    }
    draft = _node(record, "draft_review")
    assert [a["status"] for a in draft["attempts"]] == ["failed", "failed"]
    assert draft["x-rein-stand-in"] == "draft_review~hand_off"
    codes = [d["code"] for d in record["diagnostics"]]
    assert "RT033" in codes  # file_it: fragment parameter 'review' has no value
    # The required graph output 'review' is unbound (RT041), so the run cannot succeed.
    assert "RT041" in codes
    assert (code, record["status"]) == (1, "failed")
