"""Every approval that shows work binds the content of the files it names: checkpoints after
outputs and ``human`` criteria as well as gates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.core.states import RunStatus
from tests.scenarios.build import Run, graph, task

NOTES = {"notes": {"type": "file", "description": "Notes."}}


def writes_notes(**node: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    # The file is there before the run: a paused attempt of the scripted double runs again
    # on continuing, and must not write it back.
    data = graph({"a": task("a", outputs=NOTES, **node)}, ["a"])
    return data, {"a": [{"outputs": {"notes": "notes.md"}}]}


@pytest.mark.parametrize("asks", ["checkpoint", "criterion"])
def test_the_content_of_the_outputs_under_review_is_bound(tmp_path: Path, asks: str) -> None:
    (tmp_path / "notes.md").write_text("v1\n")
    if asks == "checkpoint":
        run = Run(tmp_path, *writes_notes(human=[{"at": "after_outputs", "mode": "approve"}]))
    else:
        run = Run(tmp_path, *writes_notes(success={"criteria": [
            {"id": "signoff", "kind": "human", "description": "a person signs off",
             "prompt": "Good?"}]}))
    assert run.start().status is RunStatus.AWAITING_HUMAN
    [asked] = run.pending()
    first = dict(asked.request["files"])
    assert list(first) == ["notes.md"]
    (tmp_path / "notes.md").write_text("v2, after the person looked\n")
    # The old entry's answer cannot approve the new content: continuing asks again.
    assert run.answer().status is RunStatus.AWAITING_HUMAN
    [again] = run.pending()
    assert again.request["files"] != first
    assert run.answer().status is RunStatus.SUCCEEDED


def test_an_escalation_to_a_person_carries_its_roles(tmp_path: Path) -> None:
    from rein.config.approver import Approver
    from rein.core.states import ApprovalStatus
    from rein.engine.run.approvals import answer
    from rein.errors import Refused

    data = graph({"a": task("a", failure={"on_exhausted": "escalate", "escalation": {
        "to": "human", "roles": ["on-call"]}})}, ["a"])
    run = Run(tmp_path, data, {"a": [{"failure": "tool_error", "message": "no"}]})
    assert run.start().status is RunStatus.AWAITING_HUMAN
    [asked] = run.pending()
    assert asked.request["roles"] == ["on-call"]
    with pytest.raises(Refused) as caught:
        answer(run.engine.store, tmp_path, asked, ApprovalStatus.ACCEPTED,
               approver=Approver(id="bo", roles=("developer",)), now=run.engine.now())
    assert caught.value.code == "APPROVAL_ROLE"
    answered, changed = answer(run.engine.store, tmp_path, asked, ApprovalStatus.ACCEPTED,
                               approver=Approver(id="ana", roles=("on-call",)),
                               now=run.engine.now())
    assert changed and answered.answer is not None
    assert {k: v for k, v in answered.answer.items() if k != "given"} == {
        "actor": "ana", "identity": "", "roles": ["on-call"]}
    assert answered.answer["given"]["surface"] == "api"  # a program called answer()
