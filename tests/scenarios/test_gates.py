"""Gates (AGS §7.3): review edits, input values, on_reject, and timeouts read on schedule."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main
from rein.core.states import ApprovalStatus, RunStatus
from tests.scenarios.build import Run, graph, inp, out, states, task


def gate(mode: str, **block: Any) -> dict[str, Any]:
    extra = {k: block.pop(k) for k in ("outputs", "failure", "depends_on") if k in block}
    return {"type": "gate", "title": f"{mode} gate", "description": "A person decides.",
            "gate": {"mode": mode, "prompt": "Decide.", **block}, **extra}


def review_graph() -> dict[str, Any]:
    return graph({
        "draft": task("draft", outputs=out("text")),
        "review": gate("review", present=["nodes.draft.outputs.text"], outputs=out("text"),
                       depends_on=["draft"]),
        "publish": task("publish", depends_on=["review"],
                        inputs={"text": inp("nodes.review.outputs.text")}),
    }, ["draft"])


ANSWERS = {"draft": [{"outputs": {"text": "teh draft"}}], "publish": [{}],
           "ship": [{}], "rework": [{}], "after": [{}], "senior": [{"outputs": {"ok": "yes"}}]}


def test_review_edits_are_written_to_the_targeted_output(tmp_path: Path) -> None:
    run = Run(tmp_path, review_graph(), ANSWERS)
    assert run.start().status is RunStatus.AWAITING_HUMAN
    [asked] = run.pending()
    assert asked.request["present"] == ["teh draft"]
    assert run.answer(values={"text": "the draft"}).status is RunStatus.SUCCEEDED
    assert run.node("review")["outputs"] == {"text": "the draft", "decision": "approved"}
    assert run.node("review")["human_events"][0]["outcome"] == "edited"
    assert run.node("publish")["inputs"] == {"text": "the draft"}


def test_review_without_edits_passes_the_material_on(tmp_path: Path) -> None:
    run = Run(tmp_path, review_graph(), ANSWERS)
    run.start()
    assert run.answer().status is RunStatus.SUCCEEDED
    assert run.node("review")["human_events"][0]["outcome"] == "approved"
    assert run.node("publish")["inputs"] == {"text": "teh draft"}


def test_a_review_edit_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    run = Run(tmp_path, review_graph(), ANSWERS)
    run.start()
    assert run.answer(values={"text": 7}).status is RunStatus.FAILED
    assert "RT031" in run.codes()


def input_graph() -> dict[str, Any]:
    return graph({
        "ask": gate("input", collect={
            "count": {"type": "integer", "description": "how many",
                      "schema": {"type": "integer", "minimum": 1}},
            "label": {"type": "string", "description": "a label", "default": "x"}},
            outputs=out("count", type="integer")),
        "after": task("after", depends_on=["ask"],
                      inputs={"n": inp("nodes.ask.outputs.count", "integer")}),
    }, ["ask"])


def test_input_values_become_outputs(tmp_path: Path) -> None:
    run = Run(tmp_path, input_graph(), ANSWERS)
    run.start()
    assert run.answer(values={"count": 3}).status is RunStatus.SUCCEEDED
    assert run.node("ask")["outputs"]["count"] == 3
    assert run.node("after")["inputs"] == {"n": 3}


@pytest.mark.parametrize("values", [{"count": "three"}, {"count": 0}, {}])
def test_input_values_that_do_not_fit_collect_are_refused(tmp_path: Path,
                                                          values: dict[str, Any]) -> None:
    run = Run(tmp_path, input_graph(), ANSWERS)
    run.start()
    assert run.answer(values=values).status is RunStatus.FAILED
    assert "RT031" in run.codes()
    assert states(run.record()) == {"ask": "failed", "after": "skipped"}


def route_graph(on_reject: str) -> dict[str, Any]:
    edges = [{"from": "g", "to": "ship", "kind": "conditional",
              "when": "nodes.g.outputs.decision == 'approved'"},
             {"from": "g", "to": "rework", "kind": "conditional",
              "when": "nodes.g.outputs.decision == 'rejected'"}]
    return graph({"g": gate("approve", on_reject=on_reject), "ship": task("ship"),
                  "rework": task("rework")}, ["g"], edges=edges)


def test_on_reject_route_lets_conditional_edges_decide(tmp_path: Path) -> None:
    run = Run(tmp_path, route_graph("route"), ANSWERS)
    run.start()
    assert run.answer(ApprovalStatus.DECLINED).status is RunStatus.SUCCEEDED
    assert states(run.record()) == {"g": "succeeded", "ship": "skipped",
                                    "rework": "succeeded"}
    assert run.node("g")["outputs"] == {"decision": "rejected"}


def test_on_reject_skip_dependents_skips_downstream(tmp_path: Path) -> None:
    data = graph({"g": gate("approve", on_reject="skip_dependents"),
                  "ship": task("ship", depends_on=["g"])}, ["g"])
    run = Run(tmp_path, data, ANSWERS)
    run.start()
    assert run.answer(ApprovalStatus.DECLINED).status is RunStatus.SUCCEEDED
    assert states(run.record()) == {"g": "skipped", "ship": "skipped"}
    assert run.worker.calls == []


def timed(on_timeout: str, **extra: Any) -> dict[str, Any]:
    return graph({"g": gate("approve", timeout_seconds=60, on_timeout=on_timeout, **extra),
                  "after": task("after", depends_on=["g"])}, ["g"])


def test_a_timeout_is_not_taken_before_it_is_due(tmp_path: Path) -> None:
    run = Run(tmp_path, timed("fail"), ANSWERS)
    run.start()
    run.later(30)
    assert asyncio.run(run.engine.proceed(run.run_id)).status is RunStatus.AWAITING_HUMAN


@pytest.mark.parametrize(("on_timeout", "status", "gate_status", "outcome"), [
    ("fail", RunStatus.FAILED, "failed", "timed_out"),
    ("approve", RunStatus.SUCCEEDED, "succeeded", "approved"),
])
def test_on_timeout_is_taken_when_the_run_is_next_scheduled(
        tmp_path: Path, on_timeout: str, status: RunStatus, gate_status: str,
        outcome: str) -> None:
    run = Run(tmp_path, timed(on_timeout), ANSWERS)
    run.start()
    run.later(3600)
    assert asyncio.run(run.engine.proceed(run.run_id)).status is status
    g = run.node("g")
    assert g["status"] == gate_status
    assert g["human_events"][0]["outcome"] == outcome
    assert "escalated" not in g


def test_on_timeout_hold_keeps_waiting(tmp_path: Path) -> None:
    run = Run(tmp_path, timed("hold"), ANSWERS)
    run.start()
    run.later(10**6)
    assert asyncio.run(run.engine.proceed(run.run_id)).status is RunStatus.AWAITING_HUMAN
    assert len(run.pending()) == 1


def test_on_timeout_escalate_runs_the_gates_escalation(tmp_path: Path) -> None:
    data = timed("escalate", outputs=out("ok"),
                 failure={"escalation": {"to": "node", "node": "senior"}})
    data["nodes"]["senior"] = task("senior", outputs=out("ok"))
    run = Run(tmp_path, data, ANSWERS)
    run.start()
    run.later(3600)
    assert asyncio.run(run.engine.proceed(run.run_id)).status is RunStatus.SUCCEEDED
    assert run.node("g")["outputs"] == {"ok": "yes"} and run.node("g")["escalated"] is True


def test_approvals_list_applies_due_timeouts_and_resume_continues(
        tmp_path: Path, capsys: Any) -> None:
    # The run is created on the test clock (January 2026): by the wall clock the
    # 60-second timeout has long passed when `rein approvals list` looks at it.
    run = Run(tmp_path, timed("fail"), ANSWERS)
    run.start()
    capsys.readouterr()
    assert main(["approvals", "list", "--json", "--workspace", str(tmp_path)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["approvals"] == []
    [expired] = listed["timed_out"]
    assert expired["status"] == "timed_out" and expired["run_id"] == run.run_id
    assert main(["resume", run.run_id, "--workspace", str(tmp_path), "--json"]) == 1
    assert states(run.record()) == {"g": "failed", "after": "skipped"}
