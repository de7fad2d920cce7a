"""All nine criterion kinds judged by the harness in one run, and each one able to fail it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.core.states import ApprovalStatus, RunStatus
from tests.scenarios.build import Run, graph, out, task

REPORT = {"title": "Weekly", "items": 3}
NOTES = "# Notes\n\nEverything went fine.\n"


def criteria() -> list[dict[str, Any]]:
    return [
        {"id": "cmd", "kind": "command", "description": "notes are not empty",
         "run": "test -s notes.md"},
        {"id": "file", "kind": "file_exists", "description": "notes written",
         "path": "notes.md"},
        {"id": "artifact", "kind": "artifact_present", "description": "a report",
         "output": "report"},
        {"id": "shape", "kind": "json_schema", "description": "report shape",
         "output": "report", "schema": {"type": "object", "required": ["title", "items"]}},
        {"id": "heading", "kind": "regex", "description": "a heading", "output": "notes",
         "pattern": "^# "},
        {"id": "count", "kind": "expression", "description": "some items",
         "expr": "self.outputs.report.items > 0"},
        {"id": "clear", "kind": "llm_judge", "description": "clear notes",
         "rubric": "Are the notes clear?", "inputs": ["self.outputs.notes"],
         "threshold": 0.5},
        {"id": "licence", "kind": "external", "description": "licence checker",
         "check": "licence_ok", "params": {"spdx": "MIT"}},
        {"id": "signoff", "kind": "human", "description": "a person signs off",
         "prompt": "Sign off the notes?"},
    ]


def write(tmp: Path, answer: dict[str, Any], judge: float = 0.9) -> Run:
    data = graph({"a": task("a", outputs={**out("notes"), **out("report", type="object")},
                            requirements={"permissions": ["shell:exec:test*", "fs:write:notes.md"],
                                          "workspace": "read_write"},
                            success={"mode": "all", "criteria": criteria()})}, ["a"])
    seen: list[Any] = []

    def licence_ok(request: Any) -> bool:
        seen.append(request.params)
        return request.params.get("spdx") == "MIT"

    run = Run(tmp, data, {"a": [answer]}, judges={"clear": {"score": judge,
                                                            "reasoning": "reads well"}},
              checkers={"licence_ok": licence_ok})
    run.seen = seen  # type: ignore[attr-defined]
    return run


GOOD = {"outputs": {"notes": NOTES, "report": REPORT}, "files": {"notes.md": NOTES}}


def results(run: Run) -> dict[str, bool]:
    return {r["id"]: r["passed"] for r in run.node("a")["attempts"][-1]["success"]["results"]}


def test_every_kind_passes_and_is_recorded(tmp_path: Path) -> None:
    run = write(tmp_path, GOOD)
    assert run.start().status is RunStatus.AWAITING_HUMAN  # the human criterion asks
    assert run.answer(ApprovalStatus.ACCEPTED).status is RunStatus.SUCCEEDED
    assert results(run) == {c["id"]: True for c in criteria()}
    # Judged again when the paused attempt is replayed, with the same parameters each time.
    assert run.seen and all(p == {"spdx": "MIT"} for p in run.seen)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("answer", "judge", "failing"), [
    ({"outputs": {"notes": NOTES, "report": REPORT}}, 0.9, {"cmd", "file"}),
    ({**GOOD, "outputs": {"notes": "no heading", "report": REPORT}}, 0.9, {"heading"}),
    ({**GOOD, "outputs": {"notes": NOTES, "report": {"title": "x", "items": 0}}}, 0.9,
     {"count"}),
    ({**GOOD, "outputs": {"notes": NOTES, "report": {"items": 2}}}, 0.9, {"shape"}),
    (GOOD, 0.2, {"clear"}),
])
def test_each_kind_can_fail_the_node(tmp_path: Path, answer: dict[str, Any], judge: float,
                                     failing: set[str]) -> None:
    run = write(tmp_path, answer, judge)
    status = run.start().status
    if status is RunStatus.AWAITING_HUMAN:
        status = run.answer(ApprovalStatus.ACCEPTED).status
    assert status is RunStatus.FAILED
    assert {k for k, ok in results(run).items() if not ok} == failing


def test_a_declined_human_criterion_fails_the_node(tmp_path: Path) -> None:
    run = write(tmp_path, GOOD)
    run.start()
    assert run.answer(ApprovalStatus.DECLINED).status is RunStatus.FAILED
    assert {k for k, ok in results(run).items() if not ok} == {"signoff"}
