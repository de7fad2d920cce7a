"""Human checkpoints at every stage (AGS §15), judges that cannot judge, and undo steps
that wait for a person."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.core.states import ApprovalStatus, RunStatus
from tests.scenarios.build import Run, graph, out, states, task

ACCEPT, DECLINE = ApprovalStatus.ACCEPTED, ApprovalStatus.DECLINED


def checked(stage: str, *, answers: list[dict[str, Any]] | None = None, **node: Any
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    cp = {"at": stage, "mode": "approve", "prompt": f"{stage}?", **node.pop("cp", {})}
    data = graph({"a": task("a", outputs=out("v"), human=[cp], **node),
                  "b": task("b", depends_on=["a"])}, ["a"])
    return data, {"a": answers or [{"outputs": {"v": "x"}}], "b": [{}]}


def stages_asked(run: Run) -> list[str]:
    return [r.request["stage"] for r in run.engine.store.approvals() if "stage" in r.request]


def test_before_start_is_asked_before_the_worker(tmp_path: Path) -> None:
    run = Run(tmp_path, *checked("before_start"))
    assert run.start().status is RunStatus.AWAITING_HUMAN
    assert run.worker.calls == []
    assert run.answer(ACCEPT).status is RunStatus.SUCCEEDED
    assert run.node("a")["human_events"][0]["at_stage"] == "before_start"


def test_a_rejected_before_start_fails_without_a_worker_call(tmp_path: Path) -> None:
    run = Run(tmp_path, *checked("before_start", failure={"retry": {"max_attempts": 3}}))
    run.start()
    assert run.answer(DECLINE).status is RunStatus.FAILED
    assert run.worker.calls == []
    assert run.node("a")["x-rein-failure-class"] == "permission_denied"


def test_before_side_effects_only_for_nodes_that_may_write(tmp_path: Path) -> None:
    data, answers = checked("before_side_effects",
                            requirements={"permissions": ["fs:write:docs/**"]})
    run = Run(tmp_path, data, answers)
    assert run.start().status is RunStatus.AWAITING_HUMAN and run.worker.calls == []
    assert run.answer(ACCEPT).status is RunStatus.SUCCEEDED
    (tmp_path / "ro").mkdir()
    data, answers = checked("before_side_effects",
                            requirements={"permissions": ["fs:read:**"]})
    assert Run(tmp_path / "ro", data, answers).start().status is RunStatus.SUCCEEDED


def test_after_outputs_shows_the_outputs_and_a_no_is_not_retried(tmp_path: Path) -> None:
    run = Run(tmp_path, *checked("after_outputs", failure={"retry": {"max_attempts": 3}}))
    run.start()
    [asked] = run.pending()
    assert asked.request["outputs"] == {"v": "x"}
    assert run.answer(DECLINE).status is RunStatus.FAILED
    assert [t["status"] for t in run.node("a")["attempts"]] == ["failed"]


def test_on_criteria_failure_comes_before_the_retry(tmp_path: Path) -> None:
    success = {"criteria": [{"id": "long", "kind": "expression", "description": "long",
                             "expr": "len(self.outputs.v) > 3"}]}
    run = Run(tmp_path, *checked(
        "on_criteria_failure", success=success,
        failure={"retry": {"max_attempts": 2, "backoff": "none"}},
        answers=[{"outputs": {"v": "x"}}, {"outputs": {"v": "long enough"}}]))
    assert run.start().status is RunStatus.AWAITING_HUMAN
    assert run.worker.calls == [("a", 1)]
    assert run.answer(ACCEPT).status is RunStatus.SUCCEEDED
    assert run.worker.calls == [("a", 1), ("a", 2), ("b", 1)]  # attempt 1 was not re-run


def test_a_no_at_on_criteria_failure_stops_the_retries(tmp_path: Path) -> None:
    success = {"criteria": [{"id": "long", "kind": "expression", "description": "long",
                             "expr": "len(self.outputs.v) > 3"}]}
    run = Run(tmp_path, *checked("on_criteria_failure", success=success,
                                 failure={"retry": {"max_attempts": 3, "backoff": "none"}}))
    run.start()
    assert run.answer(DECLINE).status is RunStatus.FAILED
    assert run.worker.calls == [("a", 1)]


def test_on_failure_is_asked_after_the_ladder(tmp_path: Path) -> None:
    run = Run(tmp_path, *checked("on_failure", answers=[{"failure": "tool_error"}]))
    assert run.start().status is RunStatus.AWAITING_HUMAN
    assert run.answer(ACCEPT).status is RunStatus.FAILED
    assert states(run.record()) == {"a": "failed", "b": "skipped"}
    assert run.node("a")["human_events"][0]["at_stage"] == "on_failure"


def test_on_escalation_can_stop_the_escalation(tmp_path: Path) -> None:
    data, answers = checked("on_escalation", answers=[{"failure": "tool_error"}], failure={
        "on_exhausted": "escalate", "escalation": {"to": "node", "node": "senior"}})
    data["nodes"]["senior"] = task("senior", outputs=out("v"))
    answers["senior"] = [{"outputs": {"v": "y"}}]
    run = Run(tmp_path, data, answers)
    assert run.start().status is RunStatus.AWAITING_HUMAN
    assert stages_asked(run) == ["on_escalation"]
    assert run.answer(DECLINE).status is RunStatus.FAILED
    assert ("senior", 1) not in run.worker.calls and ("a~senior", 1) not in run.worker.calls


def test_on_escalation_accepted_lets_it_go_on(tmp_path: Path) -> None:
    data, answers = checked("on_escalation", answers=[{"failure": "tool_error"}], failure={
        "on_exhausted": "escalate", "escalation": {"to": "node", "node": "senior"}})
    data["nodes"]["senior"] = task("senior", outputs=out("v"))
    answers["senior"] = [{"outputs": {"v": "y"}}]
    run = Run(tmp_path, data, answers)
    run.start()
    assert run.answer(ACCEPT).status is RunStatus.SUCCEEDED
    assert run.node("a")["outputs"] == {"v": "y"}


@pytest.mark.parametrize(("when", "asked"), [("self.attempt > 1", False),
                                             ("self.attempt == 1", True)])
def test_a_when_guard_decides_whether_to_ask(tmp_path: Path, when: str, asked: bool) -> None:
    run = Run(tmp_path, *checked("before_start", cp={"when": when}))
    status = run.start().status
    assert status is (RunStatus.AWAITING_HUMAN if asked else RunStatus.SUCCEEDED)


def test_a_checkpoint_not_required_is_surfaced_not_awaited(tmp_path: Path) -> None:
    run = Run(tmp_path, *checked("after_outputs", cp={"required": False}))
    assert run.start().status is RunStatus.SUCCEEDED
    [left] = run.pending()
    assert left.request["stage"] == "after_outputs"


def test_a_notify_checkpoint_is_recorded(tmp_path: Path) -> None:
    run = Run(tmp_path, *checked("after_outputs", cp={"mode": "notify"}))
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("a")["human_events"][0]["outcome"] == "notified"
    assert run.pending() == []


def judged(judges: dict[str, Any] | None) -> Run:
    return {"criteria": [{"id": "clear", "kind": "llm_judge", "description": "clear",
                          "rubric": "Is it clear?", "inputs": ["self.outputs.v"]}]}, judges


def test_an_llm_judge_with_no_judge_is_a_failed_criterion(tmp_path: Path) -> None:
    success, judges = judged(None)
    data = graph({"a": task("a", outputs=out("v"), success=success)}, ["a"])
    run = Run(tmp_path, data, {"a": [{"outputs": {"v": "x"}}]}, judges=judges)
    assert run.start().status is RunStatus.FAILED
    [attempt] = run.node("a")["attempts"]
    assert attempt["status"] == "criteria_failed"
    [result] = attempt["success"]["results"]
    assert result["passed"] is False and "no configured worker can judge" in result["error"]
    [rt011] = [d for d in run.record()["diagnostics"] if d["code"] == "RT011"]
    assert rt011["node_id"] == "a" and "judge 'clear'" in rt011["message"]


def test_a_judge_that_gives_no_score_fails_the_criterion(tmp_path: Path) -> None:
    success, judges = judged({"clear": {"reasoning": "I would rather not say"}})
    data = graph({"a": task("a", outputs=out("v"), success=success)}, ["a"])
    run = Run(tmp_path, data, {"a": [{"outputs": {"v": "x"}}]}, judges=judges)
    assert run.start().status is RunStatus.FAILED
    [result] = run.node("a")["attempts"][0]["success"]["results"]
    assert result["passed"] is False and "gave no score" in result["error"]


def test_a_compensation_waiting_for_a_person_is_waited_for(tmp_path: Path) -> None:
    data = graph({
        "a": task("a", failure={"compensation": "undo_a"}),
        "b": task("b", depends_on=["a"]),
        "undo_a": task("undo_a", human=[{"at": "before_start", "mode": "approve",
                                         "prompt": "Undo a?"}]),
    }, ["a"])
    run = Run(tmp_path, data, {"a": [{}], "b": [{"failure": "tool_error"}], "undo_a": [{}]})
    assert run.start().status is RunStatus.AWAITING_HUMAN
    assert run.answer(ACCEPT).status is RunStatus.FAILED
    assert states(run.record())["a~undo_a"] == "succeeded"
    assert not [d for d in run.record().get("diagnostics") or []
                if "compensation" in d["message"]]
    assert ("a~undo_a", 1) in run.worker.calls
