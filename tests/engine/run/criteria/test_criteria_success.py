"""Success blocks: modes over required criteria, advisory and relaxed criteria, evaluation
order and short-circuiting, feedback, and the run-record shape."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from typing import Any

import jsonschema
import pytest
from criteria_helpers import check, make_ctx, success
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rein.engine.run.criteria import (
    HumanAnswer,
    HumanRequest,
    JudgeRequest,
    JudgeVerdict,
)


def _present(cid: str, output: str, severity: str = "required") -> dict[str, Any]:
    return {
        "id": cid,
        "kind": "artifact_present",
        "description": f"{output} was produced",
        "output": output,
        "severity": severity,
    }


OUTPUTS = {"yes": "value", "no": ""}


def test_no_block_passes(ctx_for):
    outcome = success(None, ctx_for())
    assert outcome.passed and outcome.results == ()


@pytest.mark.parametrize(
    ("mode", "count", "outputs", "passed"),
    [
        ("all", None, ["yes", "yes"], True),
        ("all", None, ["yes", "no"], False),
        ("any", None, ["no", "yes"], True),
        ("any", None, ["no", "no"], False),
        ("n_of", 2, ["yes", "no", "yes"], True),
        ("n_of", 2, ["yes", "no", "no"], False),
    ],
)
def test_modes(ctx_for, mode, count, outputs, passed):
    block: dict[str, Any] = {
        "mode": mode,
        "criteria": [_present(f"c{i}", out) for i, out in enumerate(outputs)],
    }
    if count is not None:
        block["count"] = count
    outcome = success(block, ctx_for(OUTPUTS))
    assert outcome.passed is passed
    assert [r.id for r in outcome.results] == [f"c{i}" for i in range(len(outputs))]
    assert len(outcome.failed_required) == outputs.count("no")


def test_advisory_failures_never_fail_the_block(ctx_for):
    block = {"criteria": [_present("needed", "yes"), _present("nice", "no", "advisory")]}
    outcome = success(block, ctx_for(OUTPUTS))
    assert outcome.passed
    assert outcome.failed_required == ()
    advisory = outcome.results[1]
    assert (advisory.passed, advisory.severity) == (False, "advisory")
    assert outcome.feedback() == (
        {
            "id": "nice",
            "kind": "artifact_present",
            "severity": "advisory",
            "description": "no was produced",
            "evidence": "output 'no' is empty ('')",
        },
    )


def test_advisory_passes_do_not_count_towards_any(ctx_for):
    block = {"mode": "any", "criteria": [_present("a", "no"), _present("b", "yes", "advisory")]}
    assert not success(block, ctx_for(OUTPUTS)).passed


@pytest.mark.parametrize(("mode", "passed"), [("all", True), ("any", False), ("n_of", False)])
def test_all_advisory_block(ctx_for, mode, passed):
    block = {"mode": mode, "count": 1, "criteria": [_present("a", "yes", "advisory")]}
    outcome = success(block, ctx_for(OUTPUTS))
    assert outcome.passed is passed
    assert len(outcome.results) == 1  # evaluated and recorded all the same


def test_relaxed_criteria_count_as_advisory(ctx_for):
    block = {"criteria": [_present("strict", "no"), _present("fine", "yes")]}
    assert not success(block, ctx_for(OUTPUTS)).passed
    outcome = success(block, ctx_for(OUTPUTS), relaxed=frozenset({"strict"}))
    assert outcome.passed
    record = outcome.results[0].to_record()
    assert record["severity"] == "advisory" and record["x-rein-relaxed"] is True


def test_declared_order_evaluates_everything_for_feedback(ctx_for):
    block = {"criteria": [_present("a", "no"), _present("b", "missing"), _present("c", "yes")]}
    outcome = success(block, ctx_for(OUTPUTS))
    assert [f["id"] for f in outcome.feedback()] == ["a", "b"]
    assert outcome.short_circuited == ()
    assert [f["evidence"] for f in outcome.feedback()] == [
        "output 'no' is empty ('')",
        "output 'missing' was not produced",
    ]


def test_cheapest_first_skips_expensive_checks_once_decided(ctx_for):
    ctx = ctx_for(OUTPUTS)
    marker = ctx.workspace / "command-ran"
    block = {
        "evaluation_order": "cheapest_first",
        "criteria": [
            {"id": "cmd", "kind": "command", "description": "runs", "run": f"touch {marker}"},
            _present("cheap", "no"),
        ],
    }
    outcome = success(block, ctx)
    assert not outcome.passed
    assert outcome.short_circuited == ("cmd",)
    assert [r.id for r in outcome.results] == ["cheap"]
    assert not marker.exists()
    declared = success({**block, "evaluation_order": "declared"}, ctx)
    assert not declared.passed and marker.exists()


def test_cheapest_first_keeps_evaluating_while_undecided(ctx_for):
    ctx = ctx_for(OUTPUTS)
    block = {
        "mode": "any",
        "evaluation_order": "cheapest_first",
        "criteria": [
            {"id": "cmd", "kind": "command", "description": "runs", "run": "true"},
            _present("cheap", "no"),
        ],
    }
    outcome = success(block, ctx)
    assert outcome.passed
    assert [r.id for r in outcome.results] == ["cmd", "cheap"]  # declared order in results


def test_unknown_kind_is_an_error_result(ctx_for):
    outcome = success({"criteria": [{"id": "x", "kind": "telepathy", "description": "d"}]}, ctx_for())
    assert not outcome.passed
    assert outcome.results[0].error_code == "CRIT001"


def test_timeout_surfaces_on_the_outcome(ctx_for):
    block = {
        "criteria": [
            {"id": "slow", "kind": "command", "description": "d", "run": "sleep 20", "timeout_seconds": 0.2}
        ]
    }
    assert success(block, ctx_for()).timed_out


# --- the run record ------------------------------------------------------------------


def _run_schema() -> dict[str, Any]:
    path = files("ags") / "schema" / "agentic-graph-run-1.0.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _validator(definition: str) -> jsonschema.Draft202012Validator:
    schema = _run_schema()
    sub = {"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(sub, format_checker=jsonschema.FormatChecker())


class _Clock:
    """An injected clock that advances 1.5 s per reading."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        moment = self.now
        self.now += timedelta(seconds=1.5)
        return moment


def test_every_kind_records_in_the_run_schema_shape(ctx_for):
    ctx = ctx_for(
        {"doc": "# Title", "data": {"n": 1}},
        clock=_Clock(),
        judge=_judge_by_id({"j": 0.9}),
        ask_human=_human_by_id({"h": True}),
        checkers={"ok": lambda request: True},
        producer_instance="m1",
    )
    (ctx.workspace / "out.txt").write_text("hello")
    block = {
        "mode": "all",
        "criteria": [
            {"id": "c", "kind": "command", "description": "d", "run": "echo hi"},
            {"id": "f", "kind": "file_exists", "description": "d", "path": "out.txt"},
            {"id": "a", "kind": "artifact_present", "description": "d", "output": "doc"},
            {"id": "s", "kind": "json_schema", "description": "d", "output": "data", "schema": {"type": "object"}},
            {"id": "r", "kind": "regex", "description": "d", "output": "doc", "pattern": "^#"},
            {"id": "e", "kind": "expression", "description": "d", "expr": "self.outputs.data.n == 1"},
            {"id": "j", "kind": "llm_judge", "description": "d", "rubric": "good?"},
            {"id": "h", "kind": "human", "description": "d", "prompt": "ok?"},
            {"id": "x", "kind": "external", "description": "d", "check": "ok"},
            {"id": "bad", "kind": "expression", "description": "d", "expr": "1", "severity": "advisory"},
        ],
    }
    outcome = success(block, ctx)
    assert outcome.passed
    record = outcome.to_record()
    errors = list(_validator("criteria_results").iter_errors(record))
    assert errors == []
    assert [r["id"] for r in record["results"]] == ["c", "f", "a", "s", "r", "e", "j", "h", "x", "bad"]
    first = record["results"][0]
    assert first["evaluated_at"] == "2026-01-02T03:04:05Z"
    assert first["duration_seconds"] == 1.5
    assert json.loads(first["evidence"])["stdout"] == "hi\n"
    assert record["results"][-1]["error"].startswith("expr: cannot evaluate '1'")
    for result in outcome.results:
        assert list(_validator("criterion_result").iter_errors(result.to_record())) == []


def test_record_evidence_false_keeps_evidence_out_of_the_record(ctx_for):
    criterion = {"id": "a", "kind": "artifact_present", "output": "doc", "record_evidence": False}
    result = check(criterion, ctx_for({"doc": ""}))
    assert "evidence" not in result.to_record()
    assert result.feedback()["evidence"] == "output 'doc' is empty ('')"  # still told to the worker


def test_secrets_are_redacted_from_every_kind_of_evidence(ctx_for):
    ctx = ctx_for({"doc": "key=hunter2-secret"}, secret_values=frozenset({"hunter2-secret"}))
    result = check({"id": "r", "kind": "regex", "output": "doc", "pattern": "key=.*"}, ctx)
    assert result.passed
    assert "hunter2" not in json.dumps(result.to_record())
    assert result.evidence == "/key=.*/ matched 'key=[secret]' at offset 0 of output 'doc'"


# --- cheapest_first never changes the outcome -------------------------------------------


def _judge_by_id(scores: dict[str, float]):
    async def judge(request: JudgeRequest) -> JudgeVerdict:
        return JudgeVerdict(score=scores[request.criterion_id], reasoning="scripted", instance="j1")

    return judge


def _human_by_id(answers: dict[str, bool]):
    async def ask(request: HumanRequest) -> HumanAnswer:
        return HumanAnswer(approved=answers[request.criterion_id], note="scripted")

    return ask


def _criterion(index: int, kind: str, outcome: bool, severity: str) -> dict[str, Any]:
    cid = f"c{index}"
    base = {"id": cid, "kind": kind, "description": f"criterion {index}", "severity": severity}
    match kind:
        case "artifact_present":
            return {**base, "output": "yes" if outcome else "no"}
        case "expression":
            return {**base, "expr": "true" if outcome else "false"}
        case "regex":
            return {**base, "output": "yes", "pattern": "val" if outcome else "nothing"}
        case "file_exists":
            return {**base, "path": "present.txt" if outcome else "absent.txt"}
        case "external":
            return {**base, "check": "pass" if outcome else "fail"}
        case "llm_judge":
            return {**base, "rubric": "r"}
        case "human":
            return {**base, "prompt": "p"}
    raise AssertionError(kind)


KIND_CHOICES = ["artifact_present", "expression", "regex", "file_exists", "external", "llm_judge", "human"]

blocks = st.lists(
    st.tuples(st.sampled_from(KIND_CHOICES), st.booleans(), st.sampled_from(["required", "advisory"]), st.booleans()),
    min_size=1,
    max_size=7,
)


def _oracle(spec: list[tuple[str, bool, str, bool]], mode: str, count: int) -> bool:
    """The AGS rule, written out independently: mode over required, non-relaxed criteria."""
    required = [ok for _, ok, severity, relaxed in spec if severity == "required" and not relaxed]
    if mode == "all":
        return all(required)
    if mode == "any":
        return any(required)
    return sum(required) >= count


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=blocks, mode=st.sampled_from(["all", "any", "n_of"]), count=st.integers(1, 4))
def test_cheapest_first_gives_the_declared_outcome(tmp_path, spec, mode, count):
    (tmp_path / "present.txt").write_text("here")
    criteria = [_criterion(i, kind, ok, sev) for i, (kind, ok, sev, _) in enumerate(spec)]
    relaxed = frozenset(f"c{i}" for i, (_, _, _, r) in enumerate(spec) if r)
    outcomes = {f"c{i}": ok for i, (_, ok, _, _) in enumerate(spec)}
    ctx = make_ctx(
        tmp_path,
        OUTPUTS,
        checkers={"pass": lambda request: True, "fail": lambda request: False},
        judge=_judge_by_id({k: 1.0 if v else 0.0 for k, v in outcomes.items()}),
        ask_human=_human_by_id(outcomes),
    )
    block: dict[str, Any] = {"mode": mode, "count": count, "criteria": criteria}
    declared = success(block, ctx, relaxed=relaxed)
    cheap = success({**block, "evaluation_order": "cheapest_first"}, ctx, relaxed=relaxed)

    assert declared.passed is cheap.passed is _oracle(spec, mode, count)
    assert [r.passed for r in declared.results] == [ok for _, ok, _, _ in spec]
    by_id = {r.id: r.passed for r in declared.results}
    assert all(by_id[r.id] is r.passed for r in cheap.results)
    assert sorted([r.id for r in cheap.results] + list(cheap.short_circuited)) == sorted(by_id)
