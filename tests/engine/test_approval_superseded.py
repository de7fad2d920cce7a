"""One question, one pending entry: an approval whose material changed is closed when the
run asks about the new content, and a run that ends leaves no question of its own open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rein.core.ids import ApprovalId
from rein.core.states import ApprovalKind, ApprovalStatus, RunStatus
from rein.engine.events import EventType, append
from rein.store.base import ApprovalRow, Transition
from tests.scenarios.build import Run, graph, run_loop, task

NOTES = {"notes": {"type": "file", "description": "Notes."}}


def gated(tmp_path: Path, *, recheck: bool = False) -> Run:
    """A task writing notes.md and a gate presenting it; ``recheck``: the task checks that
    the notes hold no TBD, and the gate names it in ``x-rein-recheck``."""
    (tmp_path / "notes.md").write_text("v1\n")
    checks = {"success": {"criteria": [{
        "id": "no_tbd", "kind": "command", "description": "no TBD in the notes",
        "run": "python3 -c \"import sys; sys.exit('TBD' in open('notes.md').read())\"",
        "expect_exit_code": 0}]}} if recheck else {}
    gate: dict[str, Any] = {"type": "gate", "title": "ok", "description": "ok",
                            "depends_on": ["a"],
                            "gate": {"mode": "approve", "prompt": "Good?",
                                     "present": ["nodes.a.outputs.notes"]}}
    if recheck:
        gate["x-rein-recheck"] = ["a"]
    data = graph({"a": task("a", outputs=NOTES, **checks), "ok": gate}, ["a"])
    return Run(tmp_path, data, {"a": [{"outputs": {"notes": "notes.md"}}]})


def test_a_question_asked_about_changed_content_closes_the_one_it_replaces(
        tmp_path: Path) -> None:
    run = gated(tmp_path)
    assert run.start().status is RunStatus.AWAITING_HUMAN
    [first] = run.pending()
    (tmp_path / "notes.md").write_text("v2, edited while it waited\n")
    assert run_loop(run.engine.proceed(run.run_id)).status is RunStatus.AWAITING_HUMAN
    [second] = run.pending()
    assert second.approval_id != first.approval_id
    closed = run.engine.store.get_approval(first.approval_id)
    assert closed is not None and closed.status is ApprovalStatus.CANCELLED
    assert closed.answer is not None and closed.answer["superseded_by"] == second.approval_id
    assert closed.answer["actor"] == "rein"
    assert run.answer().status is RunStatus.SUCCEEDED


def test_a_run_that_fails_closes_every_question_it_left_open(tmp_path: Path) -> None:
    """An entry left pending beside the one the gate waits for (as an older rein left the
    entry a re-presentation replaced) is closed when the run ends, not listed for good."""
    run = gated(tmp_path)
    assert run.start().status is RunStatus.AWAITING_HUMAN
    [asked] = run.pending()
    store = run.engine.store
    left = ApprovalRow(approval_id=ApprovalId("apv-left"), run_id=asked.run_id,
                       key="gate:ok@000000000000", kind=ApprovalKind.GATE,
                       status=ApprovalStatus.PENDING, digest=asked.digest,
                       request=dict(asked.request), created_at=asked.created_at)
    append(store, asked.run_id, EventType.APPROVAL_REQUESTED,
           {"approval_id": left.approval_id, "key": left.key}, asked.created_at,
           Transition(approval=left))
    assert run.answer(ApprovalStatus.DECLINED, node="ok").status is RunStatus.FAILED
    assert run.pending() == []
    closed = store.get_approval("apv-left")
    assert closed is not None and closed.status is ApprovalStatus.CANCELLED
    assert closed.answer == {"actor": "rein", "note": "the run ended failed"}


def test_a_rechecking_gate_asks_nobody_about_work_that_no_longer_passes(
        tmp_path: Path) -> None:
    run = gated(tmp_path, recheck=True)
    assert run.start().status is RunStatus.AWAITING_HUMAN
    [first] = run.pending()
    (tmp_path / "notes.md").write_text("v2: TBD\n")
    assert run_loop(run.engine.proceed(run.run_id)).status is RunStatus.FAILED
    assert run.pending() == []  # nobody was asked; the old question closed with the run
    closed = run.engine.store.get_approval(first.approval_id)
    assert closed is not None and closed.status is ApprovalStatus.CANCELLED
    gate = run.node("ok")
    assert gate["status"] == "failed"
    assert gate["x-rein-recheck"]["node"] == "a"
    assert "APPROVAL007" in run.codes()


def test_a_rechecking_gate_presents_edited_work_that_still_passes(tmp_path: Path) -> None:
    run = gated(tmp_path, recheck=True)
    assert run.start().status is RunStatus.AWAITING_HUMAN
    [first] = run.pending()
    (tmp_path / "notes.md").write_text("v2, still complete\n")
    assert run_loop(run.engine.proceed(run.run_id)).status is RunStatus.AWAITING_HUMAN
    [second] = run.pending()
    assert second.approval_id != first.approval_id
    assert run.answer().status is RunStatus.SUCCEEDED
