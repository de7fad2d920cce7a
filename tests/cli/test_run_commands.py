"""``rein run`` / ``resume`` / ``approvals`` contracts: dry run writes nothing, approval by
digest, RT053 on resume, cancel with compensation, JSON shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.cli import main
from tests.scenarios.harness import Scenario, summary

GATED = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/gated", "title": "gated",
    "objective": "test", "requires_conformance": 3, "constraints": {"max_cost_usd": 1.0},
    "params": {"who": {"type": "string", "description": "w", "default": "ana"}},
    "entrypoints": ["work"],
    "nodes": {
        "work": {"title": "work", "description": "Do it.",
                 "failure": {"compensation": "undo"}},
        "undo": {"title": "undo", "description": "Undo it."},
        "ok": {"type": "gate", "title": "ok", "description": "Approve.", "depends_on": ["work"],
               "gate": {"mode": "approve", "prompt": "Ship it, ${{ params.who }}?"}},
    },
}


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    return Scenario(tmp_path, monkeypatch, capsys)


@pytest.fixture
def gated(scenario: Scenario) -> Scenario:
    scenario.file("g.agraph.yaml", yaml.safe_dump(GATED, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}]}})
    return scenario


def test_dry_run_checks_and_writes_nothing(gated: Scenario) -> None:
    code, out = gated.rein("run", "g.agraph.yaml", "--dry-run", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["status"] == "ready" and report["digest"].startswith("sha256-")
    assert report["params"] == {"who": "ana"}
    assert not (gated.root / ".rein").exists()
    code, out = gated.rein("run", "g.agraph.yaml", "--dry-run", "--param", "nobody=1")
    assert code == 1
    assert not (gated.root / ".rein").exists()


def test_missing_or_stale_approval_is_refused(gated: Scenario) -> None:
    code, _ = gated.rein("run", "g.agraph.yaml")
    assert code == 4
    code, _ = gated.rein("run", "g.agraph.yaml", "--approve", "sha256-AAAA")
    assert code == 4
    assert not (gated.root / ".rein").exists()


def test_an_approve_value_that_is_no_digest_is_a_usage_error(gated: Scenario) -> None:
    gated.capsys.readouterr()
    assert main(["run", "g.agraph.yaml", "--approve", "--dry-run"]) == 64
    assert "takes the graph digest that `rein graph digest g.agraph.yaml` prints" in (
        gated.capsys.readouterr().err)
    assert not (gated.root / ".rein").exists()


def test_the_plan_shows_params_as_json(gated: Scenario) -> None:
    code, out = gated.rein("run", "g.agraph.yaml", "--dry-run", "--param", "who=ana")
    assert code == 0
    assert 'params  who="ana"\n' in out
    # No node estimates its cost: unknown, not $0.00, beside the graph's limit.
    assert "cost    unknown: no node estimates its cost (limit $1.0)\n" in out


def test_json_run_streams_events_and_ends_with_the_summary(gated: Scenario) -> None:
    code, out = gated.run("g.agraph.yaml", "--param", "who=bo")
    lines = [json.loads(line) for line in out.strip().splitlines()]
    assert code == 3
    assert set(lines[-1]) == {"run_id", "status", "digest"}
    assert lines[-1]["status"] == "awaiting_human"
    assert lines[0]["type"] == "run/started"
    [pending] = gated.pending()
    assert pending["request"]["prompt"] == "Ship it, bo?"


def test_resume_refuses_a_changed_graph_unless_forced(gated: Scenario) -> None:
    gated.run("g.agraph.yaml")
    run_id = gated.last_run()
    changed = dict(GATED, title="gated, edited")
    gated.file("g.agraph.yaml", yaml.safe_dump(changed, sort_keys=False))
    code, out = gated.rein("resume", run_id, "--json")
    assert code == 4
    assert json.loads(out)["error"]["code"] == "RT053"
    code, _ = gated.rein("resume", run_id, "--force")
    assert code == 3  # still waiting for the gate, but resumed
    record = gated.record(run_id)
    assert record["metadata"]["x-rein-forced-resume"]["changed"] == ["graph_digest"]


def test_the_waiting_hint_is_what_continues_the_run(gated: Scenario) -> None:
    code, digest = gated.rein("graph", "digest", "g.agraph.yaml")
    code, out = gated.rein("run", "g.agraph.yaml", "--approve", digest.strip())
    assert code == 3
    run_id = gated.last_run()
    [pending] = gated.pending()
    apv = pending["approval_id"]  # the pause message names the real approval
    # Each command on a line of its own: a terminal never breaks one inside an id.
    assert out.endswith(f"  waiting for approval {apv} (gate) ok: Ship it, ana?\n"
                        f"  look:    rein approvals show {apv}\n"
                        f"  answer:  rein approvals accept {apv}  (the run goes on)\n"
                        f"  resume:  rein resume {run_id}  (after --no-continue)\n")
    code, out = gated.rein("approvals", "accept", pending["approval_id"])
    assert code == 0 and f"run {run_id}: succeeded" in out  # no resume needed


def test_accept_is_idempotent(gated: Scenario) -> None:
    gated.run("g.agraph.yaml")
    [pending] = gated.pending()
    code, _ = gated.rein("approvals", "accept", pending["approval_id"])
    assert code == 0
    code, out = gated.rein("approvals", "accept", pending["approval_id"])
    assert code == 0 and "already recorded" in out
    code, _ = gated.rein("approvals", "decline", pending["approval_id"])
    assert code == 4


def test_approvals_list_shows_the_run_and_what_the_gate_presents(scenario: Scenario) -> None:
    data = json.loads(json.dumps(GATED))
    data["nodes"]["work"]["outputs"] = {"notes": {"type": "text", "description": "Notes."}}
    data["nodes"]["ok"]["gate"]["present"] = ["nodes.work.outputs.notes"]
    scenario.file("g.agraph.yaml", yaml.safe_dump(data, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {"notes": "all green"}}]}})
    code, out = scenario.run("g.agraph.yaml")
    assert code == 3
    assert len(scenario.pending()) == 1
    code, text = scenario.rein("approvals", "list")
    assert code == 0
    assert text.splitlines()[1] == f"    run {summary(out)['run_id']} · shows: all green"


def test_cancel_stops_the_run_and_compensates(gated: Scenario) -> None:
    gated.run("g.agraph.yaml")
    [pending] = gated.pending()
    code, out = gated.rein("approvals", "cancel", pending["approval_id"], "--json")
    assert code == 1
    assert summary(out)["status"] == "cancelled"
    record = gated.record()
    assert gated.statuses(record)["work~undo"] == "succeeded"
    assert record["status"] == "cancelled"


def test_runs_commands_on_an_empty_workspace(scenario: Scenario) -> None:
    code, out = scenario.rein("runs", "list", "--json")
    assert (code, json.loads(out)) == (0, {"runs": []})
    code, out = scenario.rein("runs", "show", "run-nope", "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "RUN404"
    assert not (Path(scenario.root) / ".rein").exists()
