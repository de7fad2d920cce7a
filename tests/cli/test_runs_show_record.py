"""``rein runs show FILE`` reads any AGS run record: rein's own, or one another harness
wrote. The hand-made record below follows the run schema of the ``agentic-graph-spec``
package (which ships no example record): nested scopes, every node type, ``x-`` members,
harness fields rein does not know."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.engine.run.record import record_problems
from tests.scenarios.harness import Scenario

FOREIGN = Path(__file__).resolve().parents[1] / "fixtures" / "records" / \
    "other-harness.record.json"
GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/show", "title": "show",
    "objective": "test", "requires_conformance": 3, "constraints": {"max_cost_usd": 1.0},
    "entrypoints": ["a"],
    "nodes": {"a": {"title": "a", "description": "Do a."},
              "b": {"title": "b", "description": "Do b.", "depends_on": ["a"]}},
}


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    return Scenario(tmp_path, monkeypatch, capsys)


def err(scenario: Scenario, *args: str) -> tuple[int, str, str]:
    from rein.cli import main

    scenario.capsys.readouterr()
    code = main(list(args))
    got = scenario.capsys.readouterr()
    return code, got.out, got.err


def test_the_hand_made_record_follows_the_run_schema() -> None:
    assert record_problems(json.loads(FOREIGN.read_text())) == []


def test_another_harness_record_is_shown(scenario: Scenario) -> None:
    code, out = scenario.rein("runs", "show", str(FOREIGN))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "run     01J8ZK3W6Q4V7T2N9R5B1C0DXE (partial)"
    assert lines[3].startswith("harness other-harness 0.17.0 (level 3)")
    assert "  failed          fix_loop[1].run_tests (task)" in lines
    assert "                    attempt 1: 2 tests still fail" in lines
    assert "                    criterion suite_green (command) failed: FAILED " \
           "test_pay.py::test_refund" in lines
    assert "  warning RT042 [report]: node report ended succeed_degraded" in lines
    assert not any("ACME-INFO-7" in line for line in lines)  # info is left out
    assert not (scenario.root / ".rein").exists()  # a file needs no store


def test_another_harness_record_as_json(scenario: Scenario) -> None:
    code, out = scenario.rein("runs", "show", str(FOREIGN), "--json")
    assert code == 0
    view = json.loads(out)
    assert {k: view[k] for k in ("run_id", "graph_id", "status", "digest")} == {
        "run_id": "01J8ZK3W6Q4V7T2N9R5B1C0DXE", "graph_id": "acme/fix-and-ship",
        "status": "partial", "digest": "sha256-q1Yb8kqv0h8d2m6m8Zl4r2P6bKkT3nq5u7c0XbQy9aA="}
    assert [n["node"] for n in view["nodes"]] == [
        "triage", "fix_loop", "fix_loop[1].run_tests", "shards", "release", "approve",
        "report", "notify"]
    assert view["children"] == ["01J8ZK4A0000000000000000ZZ"]
    assert view["harness"] == {"name": "other-harness", "version": "0.17.0",
                               "conformance_level": 3}
    assert view["pending_approvals"] == [] and view["file"] == str(FOREIGN)


def test_reins_own_record_reads_back_like_the_stored_run(scenario: Scenario) -> None:
    scenario.file("g.agraph.yaml", yaml.safe_dump(GRAPH, sort_keys=False))
    scenario.answers({"nodes": {"a": [{"outputs": {}}],
                                "b": [{"failure": "tool_error", "message": "broken"}]}})
    code, _ = scenario.run("g.agraph.yaml")
    assert code == 1
    run_id = scenario.last_run()
    _, record = scenario.rein("runs", "record", run_id)
    path = scenario.file("elsewhere/record.json", record)
    _, stored = scenario.rein("runs", "show", run_id, "--json")
    code, from_file = scenario.rein("runs", "show", str(path), "--json")
    assert code == 0
    stored_view, file_view = json.loads(stored), json.loads(from_file)
    for key in ("run_id", "graph_id", "status", "digest", "parent_run_id", "started_at",
                "finished_at", "nodes", "children"):
        assert file_view[key] == stored_view[key], key
    assert file_view["harness"]["name"] == "rein"
    _, text = scenario.rein("runs", "show", str(path))
    assert "attempt 1: tool_error: broken" in text


def test_a_file_that_is_not_a_run_record_is_refused_with_where(scenario: Scenario) -> None:
    broken = json.loads(FOREIGN.read_text())
    broken["nodes"][2]["status"] = "exploded"
    path = scenario.file("broken.json", json.dumps(broken, indent=2))
    code, out, text = err(scenario, "runs", "show", str(path))
    assert code == 1 and out == ""
    assert "RECORD001" in text and "/nodes/2/status" in text and '"exploded"' in text
    assert "hint: give a run record" in text and "Traceback" not in text
    code, out, _ = err(scenario, "runs", "show", str(path), "--json")
    [finding] = json.loads(out)["findings"]
    assert code == 1 and finding["code"] == "RECORD001"
    assert finding["location"]["pointer"] == "/nodes/2/status"
    assert finding["location"]["line"] is not None


@pytest.mark.parametrize("text,code", [("{not json", "LOAD001"), ("[]", "RECORD001")])
def test_unreadable_files_are_findings_not_crashes(scenario: Scenario, text: str,
                                                   code: str) -> None:
    path = scenario.file("x.json", text)
    status, out, _ = err(scenario, "runs", "show", str(path), "--json")
    assert status == 1 and json.loads(out)["findings"][0]["code"] == code


def test_a_graph_is_not_a_run_record(scenario: Scenario) -> None:
    path = scenario.file("g.agraph.yaml", yaml.safe_dump(GRAPH, sort_keys=False))
    status, _, text = err(scenario, "runs", "show", str(path))
    assert status == 1 and "RECORD001" in text


def test_anything_else_is_still_a_run_id(scenario: Scenario) -> None:
    code, out = scenario.rein("runs", "show", "no-such-file.json", "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "RUN404"
