"""The driver worker's parts: tokens, instructions, envelopes, workspace checks, settings."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rein.core.failures import FailureClass
from rein.core.usage import Budget
from rein.errors import ConfigError
from rein.workers.base import AttemptRequest, AttemptResult, OutputSpec, WorkerPaused
from rein.workers.driver.fs import measure, snapshot, writes_outside, written_paths
from rein.workers.driver.protocol import (
    EnvelopeRefused,
    Limits,
    build_instruction,
    envelope_problems,
    parse_envelope,
    token_for,
)
from rein.workers.driver.status import render
from rein.workers.driver.store import TurnStatus, answer_turn, get_turn
from rein.workers.driver.worker import DriverSettings, DriverWorker, result_of
from tests.store.conftest import any_store, pg_url, store_url  # noqa: F401 - the fixtures


def request(tmp_path: Path, **changes: Any) -> AttemptRequest:
    base: dict[str, Any] = {
        "run_id": "run-1", "node_id": "pick", "attempt": 1, "kind": "decision", "title": "Pick a label",
        "brief": "Choose.", "inputs": {"notes": "short"},
        "outputs": (OutputSpec(name="reasoning", type="text", description="why"),),
        "permissions": ("fs:write:docs/**",), "tools": (), "workspace": str(tmp_path),
        "branches": ({"label": "ship", "description": "go"}, {"label": "hold", "description": ""}),
        "budget": Budget(max_agent_steps=5, max_wall_clock_seconds=60)}
    base.update(changes)
    return AttemptRequest(**base)


def test_the_token_names_the_attempt_and_nothing_else(tmp_path: Path) -> None:
    one = request(tmp_path)
    assert token_for(one) == token_for(request(tmp_path, brief="changed wording"))
    assert token_for(one) != token_for(request(tmp_path, attempt=2))
    assert token_for(one) != token_for(request(tmp_path, node_id="other"))
    assert token_for(one).startswith("drv-") and len(token_for(one)) == 24


def test_large_inputs_go_to_files_and_the_instruction_stays_bounded(tmp_path: Path) -> None:
    big = "x" * 50_000
    req = request(tmp_path, inputs={"notes": "short", "log": big}, brief="B" * 30_000)
    limits = Limits(max_instruction_bytes=8_000, max_inline_input_bytes=1_000)
    out = build_instruction(req, token="drv-t", limits=limits)
    assert out["inputs"] == {"notes": "short"}
    ref = out["inputs_in_files"]["log"]
    assert ref["path"] == ".rein/driver/drv-t/log.txt" and ref["bytes"] == 50_000
    assert (tmp_path / ref["path"]).read_text() == big
    assert (tmp_path / out["brief_in_file"]["path"]).read_text() == "B" * 30_000
    assert len(json.dumps(out).encode()) < 8_000


def test_a_decision_envelope_must_name_one_of_the_labels(tmp_path: Path) -> None:
    instruction = build_instruction(request(tmp_path), token="drv-t", limits=Limits())
    copied = instruction["example"]
    assert copied["decision"] == "<one of: ship, hold>"  # visibly a placeholder
    assert copied["outputs"] == {"reasoning": "<text: why>"}
    assert envelope_problems(copied, instruction) == [
        ('outputs/reasoning: is the example\'s placeholder "<text: why>": replace it with the '
         'real value'),
        "decision: is the example's placeholder: name one of the labels"]
    good = {**copied, "outputs": {"reasoning": "ready"}, "decision": "ship"}
    assert envelope_problems(good, instruction) == []
    assert envelope_problems({**good, "decision": "maybe"}, instruction) == [
        'decision: "maybe" is not one of "ship", "hold"']
    missing = {k: v for k, v in good.items() if k != "decision"}
    assert envelope_problems(missing, instruction) == [
        '(envelope): missing the required field(s) "decision"']
    failed = {k: v for k, v in missing.items() if k != "outputs"}
    assert envelope_problems({**failed, "status": "failed"}, instruction) == []


def test_the_text_of_a_decision_without_outputs_or_permissions(tmp_path: Path) -> None:
    req = request(tmp_path, outputs=(), permissions=())
    instruction = build_instruction(req, token="drv-t", limits=Limits())
    text = render({"status": "instruction", "run_id": "run-1", "exit_code": 3, **instruction})
    assert "## Produce" not in text  # no empty heading: a decision answers with a label
    assert "## Choose one decision label\n- ship: go\n- hold: " in text
    assert ("- permissions: none (change no file: a submit after a write is refused so that "
            "you can undo it; repeated, it fails the attempt)") in text


def test_parse_envelope_is_strict_but_tolerates_a_fence() -> None:
    assert parse_envelope('```json\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(EnvelopeRefused, match="not JSON"):
        parse_envelope('Sure! {"a": 1}')
    with pytest.raises(EnvelopeRefused, match="must be a JSON object"):
        parse_envelope("3")


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   cwd=root, check=True, capture_output=True)


def test_written_paths_see_new_changed_deleted_and_committed_files(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "keep.txt").write_text("1")
    (tmp_path / "gone.txt").write_text("1")
    (tmp_path / "dirty.txt").write_text("1")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "dirty.txt").write_text("dirty before")
    before = snapshot(tmp_path)
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "a.md").write_text("a")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "dirty.txt").write_text("dirty after")
    (tmp_path / ".rein").mkdir()
    (tmp_path / ".rein" / "inbox.json").write_text("{}")
    after = snapshot(tmp_path, previous=before)
    assert written_paths(before, after) == ["dirty.txt", "gone.txt", "new/a.md"]
    git(tmp_path, "add", "keep.txt")
    (tmp_path / "keep.txt").write_text("2")
    git(tmp_path, "commit", "-q", "-am", "sneaky")
    committed = snapshot(tmp_path, previous=after)
    assert "keep.txt" in written_paths(after, committed)


def test_writes_outside_checks_every_path_against_fs_write_grants() -> None:
    perms = ["fs:read:**", "fs:write:docs/**", "fs:create:notes/*.md", "net:fetch:*"]
    paths = ["docs/a.md", "docs/deep/b.md", "notes/x.md", "notes/sub/y.md", "src/c.py"]
    assert writes_outside(paths, perms) == ["notes/sub/y.md", "src/c.py"]
    assert writes_outside(paths, ["fs:write"]) == []
    assert writes_outside(paths, []) == paths


def test_measure_reports_time_over_the_limit_and_an_old_snapshot_as_unchecked(tmp_path: Path
                                                                        ) -> None:
    class T:
        instruction: ClassVar[dict[str, Any]] = {
            "permissions": [], "budget": {"enforced": {"max_wall_clock_seconds": 60}}}
        baseline: ClassVar[dict[str, Any]] = {"git": False, "head": None, "paths": {}}
        created_at = "2026-01-01T00:00:00Z"

    now = dt.datetime(2026, 1, 1, 0, 2, tzinfo=dt.UTC)
    checks, _after = measure(tmp_path, T(), now)
    assert checks["timed_out"] is True and checks["elapsed_seconds"] == 120.0
    assert "older rein" in checks["unchecked"]  # a stored turn of the old format stays readable


def test_settings_refuse_unknown_tiers_and_bad_ratios() -> None:
    assert DriverSettings.from_config({"tiers": ["minimal"]}).tiers == ("minimal",)
    with pytest.raises(ConfigError, match="unknown tier"):
        DriverSettings.from_config({"tiers": ["huge"]})
    with pytest.raises(ConfigError, match="clean_context_at"):
        DriverSettings.from_config({"clean_context_at": 1.5})


def test_the_worker_serves_only_its_tiers(tmp_path: Path) -> None:
    worker = DriverWorker(tmp_path, settings=DriverSettings(tiers=("minimal",)))
    assert worker.can_serve(request(tmp_path, tier="minimal"))
    assert not worker.can_serve(request(tmp_path, tier="frontier"))


def _drain(worker: DriverWorker, req: AttemptRequest) -> list[Any]:
    async def go() -> list[Any]:
        return [item async for item in worker.run(req)]

    return asyncio.run(go())


def test_the_worker_pauses_then_replays_the_stored_answer(
        tmp_path: Path, any_store: Any) -> None:  # noqa: F811
    store = any_store  # every store: the worker uses only the public store API
    clock = lambda: dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    worker = DriverWorker(tmp_path, store=store, clock=clock,
                          snapshot=lambda _: {"git": False, "head": None, "paths": {}})
    req = request(tmp_path)
    token = token_for(req)
    for _ in range(2):  # asking again pauses again: same token, no second turn
        with pytest.raises(WorkerPaused) as paused:
            _drain(worker, req)
        assert paused.value.token == token
    turn = get_turn(store, token)
    assert turn is not None and turn.status is TurnStatus.PENDING
    envelope = {**turn.instruction["example"], "outputs": {"reasoning": "ready"},
                "decision": "ship",
                "agent": {"name": "an agent", "model": "m-1"}}
    answered, changed = answer_turn(store, token, {"envelope": envelope, "checks": {}},
                                    "2026-01-01T00:01:00Z")
    assert changed and answered.status is TurnStatus.ANSWERED
    assert answer_turn(store, token, {"envelope": envelope, "checks": {"x": 1}}, "t")[1] is False
    *items, result = _drain(worker, req)
    assert isinstance(result, AttemptResult)
    assert (result.decision, result.outputs) == ("ship", {"reasoning": "ready"})
    assert (result.routed.provider, result.routed.model) == ("driver", "m-1")
    assert result.usage.input_tokens is None and result.usage.cost_usd is None
    assert items[0].data["limits"] == {"max_agent_steps": 5}  # reported, not enforced


def test_checks_become_failures(tmp_path: Path) -> None:
    req = request(tmp_path)

    class T:
        token = "drv-t"
        instruction: ClassVar[dict[str, Any]] = {}

        def __init__(self, checks: dict[str, Any]) -> None:
            self.answer = {"envelope": {"status": "done", "outputs": {}}, "checks": checks}

    assert result_of(T({"writes_outside": ["a"]}), req).failure is \
        FailureClass.PERMISSION_DENIED
    assert result_of(T({"head_moved": True}), req).failure is FailureClass.PERMISSION_DENIED
    assert result_of(T({"head_moved": True, "commit_allowed": True}), req).failure is None
    assert result_of(T({"timed_out": True}), req).failure is FailureClass.TIMEOUT


def test_a_copied_judge_example_is_refused_and_a_score_outside_0_1_too(tmp_path: Path) -> None:
    req = request(tmp_path, kind="judge", branches=(), outputs=(
        OutputSpec(name="score", type="number", description="score in [0, 1]",
                   schema={"type": "number", "minimum": 0, "maximum": 1}),
        OutputSpec(name="reasoning", type="text", description="why")))
    instruction = build_instruction(req, token="drv-t", limits=Limits())
    example = instruction["example"]
    assert example["outputs"]["score"] == "<number: score in [0, 1]>"
    assert envelope_problems(example, instruction)  # copied as it is, it never passes
    good = {**example, "outputs": {"score": 0.75, "reasoning": "fine"}}
    assert envelope_problems(good, instruction) == []
    problems = envelope_problems({**good, "outputs": {"score": 7, "reasoning": "x"}},
                                 instruction)
    assert problems and problems[0].startswith("outputs/score: ")


def test_budgets_are_shown_without_float_noise(tmp_path: Path) -> None:
    req = request(tmp_path, budget=Budget(max_wall_clock_seconds=7199.851559,
                                          max_cost_usd=0.30000000000000004))
    budget = build_instruction(req, token="drv-t", limits=Limits())["budget"]
    assert budget == {"enforced": {"max_wall_clock_seconds": 7199},
                      "on_reported_usage": {"max_cost_usd": 0.3}, "unenforced": {}}
