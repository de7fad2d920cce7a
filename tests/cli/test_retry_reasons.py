"""Why a retry happened, said where a person looks: the live view's lines and the event
name the failed criterion, its description and its evidence (not "success criteria
failed"); and the redrawn view keeps its columns still from one frame to the next."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.cli import main
from rein.cli.live import render
from rein.cli.live_state import RunView
from rein.store.base import Event
from tests.scenarios.harness import Scenario

# `build` passes its check on the second attempt: the first finds one test failing.
CHECKED: dict[str, Any] = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/retry-reason",
    "title": "retry reason", "objective": "o", "requires_conformance": 3,
    "entrypoints": ["plan"],
    "nodes": {
        "plan": {"title": "Plan", "description": "Plan."},
        "build": {"title": "Build", "description": "Build.", "depends_on": ["plan"],
                  "requirements": {"workspace": "read_write",
                                   "permissions": ["fs:write:fixed"]},
                  "failure": {"retry": {"max_attempts": 2, "backoff": "fixed",
                                        "initial_delay_seconds": 0,
                                        "retry_on": ["criteria_failed"]}},
                  "success": {"criteria": [
                      {"id": "tests", "kind": "command", "description": "the tests pass",
                       "run": "test -f fixed && echo '3 passed' && exit 0; "
                              "echo 'collected 3'; echo '1 failed, 2 passed'; exit 1"},
                      {"id": "notes", "kind": "command", "description": "notes exist",
                       "run": "test -f fixed"}]}},
    },
}
ANSWERS = {"nodes": {"plan": [{"outputs": {}}],
                     "build": [{"outputs": {}}, {"outputs": {}, "files": {"fixed": "y"}}]}}


@pytest.fixture
def checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    scenario = Scenario(tmp_path, monkeypatch, capsys)
    scenario.file("g.agraph.yaml", yaml.safe_dump(CHECKED, sort_keys=False))
    scenario.answers(ANSWERS)
    return scenario


REASON = ("criteria_failed: criterion tests failed (the tests pass): exit 1: 1 failed, "
          "2 passed; also failed: notes")


def test_the_retry_line_and_event_name_the_criterion_and_its_evidence(checked: Scenario
                                                                      ) -> None:
    _, digest = checked.rein("graph", "digest", "g.agraph.yaml")
    checked.capsys.readouterr()
    assert main(["run", "g.agraph.yaml", "--approve", digest.strip()]) == 0
    err = checked.capsys.readouterr().err
    assert f"  ✗ build attempt 1: {REASON}" in err.splitlines()
    code, out = checked.rein("runs", "events", "--json")
    assert code == 0
    [failed] = [e["payload"] for e in map(json.loads, out.splitlines())
                if e.get("type") == "attempt/finished" and e["payload"].get("error")]
    assert failed["error"] == REASON
    [build] = [n for n in checked.record()["nodes"] if n["node_id"] == "build"]
    assert build["attempts"][0]["error"] == REASON


def test_the_redrawn_view_keeps_its_columns_from_frame_to_frame(checked: Scenario) -> None:
    from rich.console import Console

    code, out = checked.run("g.agraph.yaml")
    assert code == 0
    events = [Event(run_id=e["run_id"], seq=e["seq"], type=e["type"], payload=e["payload"],
                    at=e["at"]) for e in map(json.loads, out.splitlines()[:-1])]
    view = RunView(run_id=str(events[0].run_id))
    for key, type_ in (("plan", "task"), ("build", "task")):
        view.seed(key, type_)
    starts: dict[str, set[int]] = {}  # row → where its status began, frame by frame
    for event in events:  # one frame after each event, as the screen redraws
        view.apply(event)
        console = Console(record=True, width=100, color_system=None)
        console.print(render(view, now=event.at))
        for line in console.export_text().splitlines():
            row = re.match(r"^(?:[✓✗…⏸·-] (\S+)|    (attempt \d+))\s+(\S+)\s+", line)
            if row:
                name = row[1] or row[2]
                starts.setdefault(name, set()).add(row.start(3))
    assert set(starts) >= {"plan", "build", "attempt 1"}
    # The status starts at one column in every frame, on every row: nothing moves when an
    # attempt fails and its row (with a longer result) appears.
    assert len(set().union(*starts.values())) == 1, starts
