"""The failure ladder of AGS §14, one path per test: retry, fallback, escalation, exhaustion."""

from __future__ import annotations

from pathlib import Path

import pytest

from rein.core.states import ApprovalStatus, RunStatus
from rein.engine.run.routing import Router
from tests.scenarios.build import Run, graph, inp, out, states, task

FAIL = [{"failure": "tool_error", "message": "broken"}]


def test_degrade_outputs_keeps_the_listed_outputs(tmp_path: Path) -> None:
    data = graph({"a": task("a", outputs=out("summary", "details"), failure={
        "fallback": [{"strategy": "degrade_outputs", "outputs": ["summary"]}]}),
        "b": task("b", depends_on=["a"], inputs={"s": inp("nodes.a.outputs.summary")})},
        ["a"])
    run = Run(tmp_path, data, {"a": [{"outputs": {"summary": "short"}}], "b": [{}]})
    assert run.start().status is RunStatus.SUCCEEDED
    a = run.node("a")
    assert a["status"] == "succeeded" and a["fallback_used"] == "degrade_outputs"
    assert a["outputs"] == {"summary": "short"}
    assert a["attempts"][0]["status"] == "failed"  # details was missing (RT033)
    assert run.node("b")["inputs"] == {"s": "short"}


def test_degrade_outputs_does_not_apply_without_the_listed_output(tmp_path: Path) -> None:
    data = graph({"a": task("a", outputs=out("summary", "details"), failure={
        "fallback": [{"strategy": "degrade_outputs", "outputs": ["summary"]}]})}, ["a"])
    run = Run(tmp_path, data, {"a": [{"outputs": {"details": "long"}}]})
    assert run.start().status is RunStatus.FAILED
    assert "fallback_used" not in run.node("a")


def test_relax_criteria_rereads_without_running_again(tmp_path: Path) -> None:
    success = {"mode": "all", "criteria": [
        {"id": "has_title", "kind": "regex", "description": "a title", "output": "text",
         "pattern": "^# "},
        {"id": "long_enough", "kind": "expression", "description": "long",
         "expr": "len(self.outputs.text) > 40"}]}
    data = graph({"a": task("a", outputs=out("text"), success=success, failure={
        "retry": {"max_attempts": 2, "backoff": "none"},
        "fallback": [{"strategy": "relax_criteria", "criteria": ["long_enough"]}]})}, ["a"])
    run = Run(tmp_path, data, {"a": [{"outputs": {"text": "# Short"}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    a = run.node("a")
    assert a["fallback_used"] == "relax_criteria" and a["x-rein-relaxed"] == ["long_enough"]
    assert [t["status"] for t in a["attempts"]] == ["criteria_failed", "criteria_failed"]
    assert run.worker.calls == [("a", 1), ("a", 2)]  # nothing ran for the relaxation


def test_relax_criteria_cannot_pass_a_criterion_it_does_not_name(tmp_path: Path) -> None:
    success = {"criteria": [
        {"id": "has_title", "kind": "regex", "description": "t", "output": "text",
         "pattern": "^# "},
        {"id": "long_enough", "kind": "expression", "description": "l",
         "expr": "len(self.outputs.text) > 40"}]}
    data = graph({"a": task("a", outputs=out("text"), success=success, failure={
        "fallback": [{"strategy": "relax_criteria", "criteria": ["long_enough"]}]})}, ["a"])
    run = Run(tmp_path, data, {"a": [{"outputs": {"text": "no title"}}]})
    assert run.start().status is RunStatus.FAILED
    assert run.node("a")["status"] == "failed"


def test_human_takeover_supplies_the_outputs(tmp_path: Path) -> None:
    data = graph({"a": task("a", outputs=out("answer"), failure={
        "fallback": [{"strategy": "human_takeover", "description": "write the answer"}]}),
        "b": task("b", depends_on=["a"], inputs={"x": inp("nodes.a.outputs.answer")})},
        ["a"])
    run = Run(tmp_path, data, {"a": FAIL, "b": [{}]})
    assert run.start().status is RunStatus.AWAITING_HUMAN
    [asked] = run.pending()
    assert asked.kind.value == "escalation" and asked.request["reason"] == "takeover"
    assert asked.request["prompt"] == "write the answer"
    assert run.answer(values={"answer": "42"}).status is RunStatus.SUCCEEDED
    a = run.node("a")
    assert a["fallback_used"] == "human_takeover" and a["outputs"] == {"answer": "42"}
    assert a["human_events"][0]["outcome"] == "provided"
    assert run.node("b")["inputs"] == {"x": "42"}


def test_a_declined_takeover_moves_on_to_the_next_rung(tmp_path: Path) -> None:
    data = graph({"a": task("a", outputs=out("answer"), failure={
        "fallback": [{"strategy": "human_takeover"}], "on_exhausted": "skip"})}, ["a"])
    run = Run(tmp_path, data, {"a": FAIL})
    run.start()
    assert run.answer(ApprovalStatus.DECLINED).status is RunStatus.SUCCEEDED
    assert run.node("a")["status"] == "skipped"
    assert run.node("a")["skip_reason"] == "on_exhausted: skip"


def test_taken_over_outputs_are_checked_like_any_outputs(tmp_path: Path) -> None:
    data = graph({"a": task("a", outputs=out("count", type="integer"), failure={
        "fallback": [{"strategy": "human_takeover"}]})}, ["a"])
    run = Run(tmp_path, data, {"a": FAIL})
    run.start()
    assert run.answer(values={"count": "many"}).status is RunStatus.FAILED
    assert "RT031" in run.codes()


def test_escalation_to_a_node_runs_it_in_this_ones_place(tmp_path: Path) -> None:
    data = graph({
        "a": task("a", outputs=out("v"), failure={
            "on_exhausted": "escalate", "escalation": {"to": "node", "node": "senior"}}),
        "senior": task("senior", outputs=out("v")),
    }, ["a"])
    run = Run(tmp_path, data, {"a": FAIL, "senior": [{"outputs": {"v": "fixed"}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    s = states(run.record())
    assert s == {"a": "succeeded", "senior": "skipped", "a~senior": "succeeded"}
    assert run.node("a")["escalated"] is True and run.node("a")["outputs"] == {"v": "fixed"}


def test_escalation_to_a_human_with_outputs_resolves_the_node(tmp_path: Path) -> None:
    data = graph({"a": task("a", outputs=out("v"), failure={
        "on_exhausted": "escalate",
        "escalation": {"to": "human", "message": "a failed on attempt ${{ self.attempt }}"}})},
        ["a"])
    run = Run(tmp_path, data, {"a": FAIL})
    assert run.start().status is RunStatus.AWAITING_HUMAN
    [asked] = run.pending()
    assert asked.request["reason"] == "escalation"
    assert asked.request["prompt"] == "a failed on attempt 1"
    assert run.answer(values={"v": "by hand"}).status is RunStatus.SUCCEEDED
    assert run.node("a")["outputs"] == {"v": "by hand"} and run.node("a")["escalated"]


def test_an_acknowledged_escalation_leaves_the_node_failed(tmp_path: Path) -> None:
    data = graph({"a": task("a", outputs=out("v"), failure={
        "on_exhausted": "escalate", "escalation": {"to": "human"}})}, ["a"])
    run = Run(tmp_path, data, {"a": FAIL})
    run.start()
    assert run.answer().status is RunStatus.FAILED  # accepted, but nothing handed back
    a = run.node("a")
    assert a["status"] == "failed" and a["escalated"] is True


def test_succeed_degraded_makes_the_run_partial(tmp_path: Path) -> None:
    data = graph({"a": task("a", outputs=out("v"), failure={"on_exhausted": "succeed_degraded"}),
                  "b": task("b", depends_on=["a"])}, ["a"])
    run = Run(tmp_path, data, {"a": [{"outputs": {"v": "half"}, "failure": "tool_error"}],
                               "b": [{}]})
    assert run.start().status is RunStatus.PARTIAL
    assert states(run.record()) == {"a": "succeeded", "b": "succeeded"}
    assert "RT042" in run.codes()
    assert run.node("a")["x-rein-degraded"] is True


def test_retry_on_classes_that_do_not_match_are_not_retried(tmp_path: Path) -> None:
    data = graph({"a": task("a", failure={"retry": {
        "max_attempts": 3, "retry_on": ["transient"], "backoff": "none"}})}, ["a"])
    run = Run(tmp_path, data, {"a": FAIL})
    assert run.start().status is RunStatus.FAILED
    assert len(run.node("a")["attempts"]) == 1
    assert run.sleeps.delays == []


def test_retry_on_a_matching_class_retries(tmp_path: Path) -> None:
    data = graph({"a": task("a", failure={"retry": {
        "max_attempts": 3, "retry_on": ["tool_error"], "backoff": "none"}})}, ["a"])
    run = Run(tmp_path, data, {"a": [*FAIL, *FAIL, {}]})
    assert run.start().status is RunStatus.SUCCEEDED
    assert [t["status"] for t in run.node("a")["attempts"]] == ["failed", "failed", "succeeded"]


def test_escalate_intelligence_routes_each_retry_higher(tmp_path: Path) -> None:
    router = Router.from_config({"standard": {"provider": "p", "model": "mid"},
                                 "frontier": {"provider": "p", "model": "big"}}, None)
    data = graph({"a": task("a", intelligence={"tier": "standard", "escalate_to": "frontier"},
                            failure={"retry": {"max_attempts": 3, "backoff": "none",
                                               "escalate_intelligence": True}})}, ["a"])
    run = Run(tmp_path, data, {"a": [*FAIL, *FAIL, {}]}, router=router)
    assert run.start().status is RunStatus.SUCCEEDED
    routed = [t["routed"] for t in run.node("a")["attempts"]]
    assert [(r["requested_tier"], r["model"]) for r in routed] == [
        ("standard", "mid"), ("frontier", "big"), ("frontier", "big")]


@pytest.mark.parametrize(("retry", "delays"), [
    ({"backoff": "fixed", "initial_delay_seconds": 3, "jitter": False}, [3.0, 3.0, 3.0]),
    ({"backoff": "linear", "initial_delay_seconds": 2, "jitter": False}, [2.0, 4.0, 6.0]),
    ({"backoff": "exponential", "initial_delay_seconds": 2, "max_delay_seconds": 5,
      "jitter": False}, [2.0, 4.0, 5.0]),
    ({"backoff": "none"}, [0.0, 0.0, 0.0]),
])
def test_backoff_delays_are_computed_not_waited(tmp_path: Path, retry: dict,
                                                delays: list[float]) -> None:
    data = graph({"a": task("a", failure={"retry": {"max_attempts": 4, **retry}})}, ["a"])
    run = Run(tmp_path, data, {"a": FAIL})
    assert run.start().status is RunStatus.FAILED
    assert run.sleeps.delays == delays


def test_jitter_is_seeded_by_run_node_and_attempt(tmp_path: Path) -> None:
    data = graph({"a": task("a", failure={"retry": {
        "max_attempts": 3, "backoff": "fixed", "initial_delay_seconds": 10}})}, ["a"])
    seen = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        run = Run(tmp_path / name, data, {"a": FAIL})
        run.start()
        seen.append(run.sleeps.delays)
    assert seen[0] == seen[1]
    assert all(0 <= d <= 10 for d in seen[0]) and seen[0][0] != seen[0][1]


def test_escalation_to_a_supervisor_is_recorded_and_the_node_stays_failed(
        tmp_path: Path) -> None:
    data = graph({"a": task("a", failure={
        "on_exhausted": "escalate", "escalation": {"to": "supervisor"}})}, ["a"])
    run = Run(tmp_path, data, {"a": FAIL})
    assert run.start().status is RunStatus.FAILED
    assert run.node("a")["escalated"] is True and run.node("a")["status"] == "failed"
    [warning] = [d for d in run.record()["diagnostics"] if "supervisor" in d["message"]]
    assert warning["severity"] == "warning"


def test_nesting_deeper_than_max_subgraph_depth_fails_the_node(tmp_path: Path) -> None:
    inner = {"type": "loop", "title": "inner", "description": "Inner loop.",
             "loop": {"mode": "repeat", "max_iterations": 1, "body": {
                 "entrypoints": ["leaf"], "nodes": {"leaf": task("leaf")}}}}
    outer = {"type": "loop", "title": "outer", "description": "Outer loop.",
             "loop": {"mode": "repeat", "max_iterations": 1, "body": {
                 "entrypoints": ["inner"], "nodes": {"inner": inner}}}}
    data = graph({"outer": outer}, ["outer"], constraints={"max_subgraph_depth": 1})
    run = Run(tmp_path, data, {"leaf": [{}]})
    assert run.start().status is RunStatus.FAILED
    assert run.node("outer[0].inner")["status"] == "failed"
    assert run.worker.calls == []
    [rt061] = [d for d in run.record()["diagnostics"] if d["code"] == "RT061"]
    assert "nesting depth 2 exceeds" in rt061["message"]


# -- the escalation rung runs whatever on_exhausted says (§14) ------------------------------


def test_a_declared_escalation_runs_without_on_exhausted_escalate(tmp_path: Path) -> None:
    data = graph({
        "a": task("a", outputs=out("v"), failure={
            "escalation": {"to": "node", "node": "senior"}}),  # on_exhausted: fail (default)
        "senior": task("senior", outputs=out("v")),
    }, ["a"])
    run = Run(tmp_path, data, {"a": FAIL, "senior": [{"outputs": {"v": "fixed"}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("a")["escalated"] is True and run.node("a")["outputs"] == {"v": "fixed"}


def test_the_escalation_comes_after_the_fallbacks(tmp_path: Path) -> None:
    data = graph({
        "a": task("a", outputs=out("v"), failure={
            "fallback": [{"strategy": "alternate_node", "node": "plan_b"}],
            "escalation": {"to": "node", "node": "senior"}}),
        "plan_b": task("plan_b", outputs=out("v")),
        "senior": task("senior", outputs=out("v")),
    }, ["a"])
    run = Run(tmp_path, data, {"a": FAIL, "plan_b": FAIL,
                               "senior": [{"outputs": {"v": "fixed"}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    s = states(run.record())
    assert s["a~plan_b"] == "failed" and s["a~senior"] == "succeeded"
    assert "fallback_used" not in run.node("a")


def test_an_escalation_that_hands_nothing_back_leaves_on_exhausted_to_decide(
        tmp_path: Path) -> None:
    data = graph({"a": task("a", outputs=out("v"), failure={
        "escalation": {"to": "human"}, "on_exhausted": "skip"})}, ["a"])
    run = Run(tmp_path, data, {"a": FAIL})
    assert run.start().status is RunStatus.AWAITING_HUMAN  # the rung runs first
    assert run.answer().status is RunStatus.SUCCEEDED  # acknowledged, nothing handed back
    a = run.node("a")
    assert a["status"] == "skipped" and a["escalated"] is True
    assert a["skip_reason"] == "on_exhausted: skip"


def test_a_blocked_node_still_escalates(tmp_path: Path) -> None:
    data = graph({
        "a": task("a", outputs=out("v"), constraints={"isolation": "container"},
                  failure={"escalation": {"to": "node", "node": "senior"}}),
        "senior": task("senior", outputs=out("v")),
    }, ["a"])
    run = Run(tmp_path, data, {"a": [{}], "senior": [{"outputs": {"v": "fixed"}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    assert run.node("a")["escalated"] is True and "RT014" in run.codes()


@pytest.mark.parametrize("where", ["node", "defaults", "loop", "gate", "policy"])
def test_escalate_without_an_escalation_is_refused_before_running(
        tmp_path: Path, where: str) -> None:
    from rein.engine.run.runner import PrepareFailed

    node = task("a", failure={"on_exhausted": "escalate"})
    extra: dict = {}
    pointer = "/nodes/a/failure/on_exhausted"
    if where == "defaults":
        node, extra = task("a"), {"defaults": {"failure": {"on_exhausted": "escalate"}}}
    elif where == "loop":
        node = {"type": "loop", "title": "l", "description": "A loop.", "loop": {
            "mode": "until", "condition": "false", "max_iterations": 1,
            "on_max_iterations": "escalate",
            "body": {"entrypoints": ["leaf"], "nodes": {"leaf": task("leaf")}}}}
        pointer = "/nodes/a/loop/on_max_iterations"
    elif where in ("gate", "policy"):
        # A gate whose timeout escalates with nothing declared would end as a rejection.
        node = {"type": "gate", "title": "g", "description": "Approve.",
                "gate": {"mode": "approve", "prompt": "Ship?", "timeout_seconds": 5}}
        if where == "gate":
            node["gate"]["on_timeout"] = "escalate"
            pointer = "/nodes/a/gate/on_timeout"
        else:
            extra, pointer = {"policy": {"on_human_timeout": "escalate"}}, "/nodes/a/gate"
    run = Run(tmp_path, graph({"a": node}, ["a"], **extra), {"a": FAIL, "leaf": [{}]})
    with pytest.raises(PrepareFailed) as info:
        run.start()
    assert info.value.code == "LADDER001"
    assert info.value.location.pointer == pointer
    assert "declares no failure.escalation" in info.value.message
    assert run.worker.calls == []
