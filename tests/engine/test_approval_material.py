"""Every approval that shows work binds the content of the files it names: checkpoints after
outputs and ``human`` criteria as well as gates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.store.state import RunStatus
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
