"""``rein approvals accept|decline|cancel`` continue a run only under its approval (RT053):
refused before the answer is recorded when the graph or a child document changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_run_commands import GATED
from tests.scenarios.harness import Scenario

CHILD = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/child", "title": "child",
         "objective": "test", "requires_conformance": 3, "entrypoints": ["c"],
         "nodes": {"c": {"title": "c", "description": "Do c."}}}


@pytest.fixture
def with_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    scenario = Scenario(tmp_path, monkeypatch, capsys)
    data = json.loads(json.dumps(GATED))
    data["nodes"]["sub"] = {"type": "subgraph", "title": "sub", "description": "Child.",
                            "depends_on": ["ok"],
                            "subgraph": {"ref": {"uri": "child.agraph.yaml"}}}
    scenario.file("g.agraph.yaml", yaml.safe_dump(data, sort_keys=False))
    scenario.file("child.agraph.yaml", yaml.safe_dump(CHILD, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}],
                                "c": [{"outputs": {}}]}})
    return scenario


@pytest.mark.parametrize("verb", ["accept", "decline", "cancel"])
@pytest.mark.parametrize("edited", ["g.agraph.yaml", "child.agraph.yaml"])
def test_an_answer_that_continues_a_changed_run_is_refused(with_child: Scenario, verb: str,
                                                           edited: str) -> None:
    code, _ = with_child.run("g.agraph.yaml")
    assert code == 3
    run_id = with_child.last_run()
    [pending] = with_child.pending()
    text = (with_child.root / edited).read_text()
    with_child.file(edited, text.replace("title: ", "title: edited ", 1))
    code, out = with_child.rein("approvals", verb, pending["approval_id"], "--json")
    assert code == 4
    error = json.loads(out)["error"]
    assert error["code"] == "RT053"
    assert "was not recorded" in error["message"] and "--force" in error["hint"]
    assert [p["approval_id"] for p in with_child.pending()] == [pending["approval_id"]]
    code, out = with_child.rein("runs", "list", "--json")
    [run] = [r for r in json.loads(out)["runs"] if r["run_id"] == run_id]
    assert run["status"] == "awaiting_human"


def test_no_continue_records_and_a_forced_resume_continues(with_child: Scenario) -> None:
    with_child.run("g.agraph.yaml")
    run_id = with_child.last_run()
    [pending] = with_child.pending()
    with_child.file("child.agraph.yaml", yaml.safe_dump({**CHILD, "title": "edited"}))
    code, _ = with_child.rein("approvals", "accept", pending["approval_id"], "--no-continue")
    assert code == 0
    code, out = with_child.rein("resume", run_id, "--json")
    assert code == 4 and json.loads(out)["error"]["code"] == "RT053"
    code, _ = with_child.rein("resume", run_id, "--force")
    assert code == 0
    assert with_child.record(run_id)["metadata"]["x-rein-forced-resume"]["changed"] == [
        "children"]
