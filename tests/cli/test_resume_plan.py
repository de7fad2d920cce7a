"""``rein resume`` says what it will do before it acts: the nodes kept, the attempts that
were in flight, the questions still open, whether the files changed; ``--dry-run`` stops
there and changes nothing; no run named is the newest run of the workspace."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_run_commands import GATED
from tests.durability.support import event_count, rein, runs, start, wait_for, write_graph
from tests.scenarios.harness import Scenario


@pytest.fixture
def waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    """A run of the gated graph, paused at its gate."""
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    scenario = Scenario(tmp_path, monkeypatch, capsys)
    scenario.file("g.agraph.yaml", yaml.safe_dump(GATED, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}]}})
    code, _ = scenario.run("g.agraph.yaml")
    assert code == 3
    return scenario


def test_dry_run_names_the_kept_nodes_and_the_open_gate_and_changes_nothing(
        waiting: Scenario) -> None:
    run_id = waiting.last_run()
    [pending] = waiting.pending()
    before = event_count(waiting.root)
    code, out = waiting.rein("resume", "--dry-run", "--json")  # no run named: the newest
    assert code == 0
    plan = json.loads(out)
    assert plan["run_id"] == run_id and plan["status"] == "awaiting_human"
    assert plan["action"] == "continue"
    assert plan["completed"] == [{"node": "undo", "status": "skipped"},  # in record order
                                 {"node": "work", "status": "succeeded"}]
    assert plan["gates"] == [{"approval_id": pending["approval_id"], "kind": "gate",
                              "node": "ok", "prompt": "Ship it, ana?"}]
    assert (plan["graph_changed"], plan["changed"], plan["in_flight"]) == (False, [], [])
    assert event_count(waiting.root) == before  # nothing recorded


def test_dry_run_says_a_changed_graph_would_be_refused(waiting: Scenario) -> None:
    run_id = waiting.last_run()
    waiting.file("g.agraph.yaml", yaml.safe_dump(dict(GATED, title="edited"), sort_keys=False))
    code, out = waiting.rein("resume", run_id, "--dry-run", "--json")
    assert code == 0
    plan = json.loads(out)
    assert (plan["action"], plan["graph_changed"], plan["changed"]) == (
        "refused", True, ["graph_digest"])
    assert plan["refusal"].startswith(f"RT053: run {run_id} was approved for a different")
    code, out = waiting.rein("resume", "--dry-run")
    assert code == 0
    assert "graph    changed since the approval: graph_digest\n" in out
    assert out.endswith(f"dry run: nothing was changed. To continue: rein resume {run_id} "
                        "--force\n")
    code, out = waiting.rein("resume", "--dry-run", "--force")
    assert code == 0
    assert "will     continue under the files as they are now (--force: the override is " \
        "recorded)\n" in out


def test_resume_shows_its_plan_before_the_run_advances(waiting: Scenario) -> None:
    run_id = waiting.last_run()
    [pending] = waiting.pending()
    code, out = waiting.rein("resume")
    assert code == 3  # still waiting for the gate
    lines = out.splitlines()
    assert lines[:5] == [
        f"run      {run_id} (awaiting_human)",
        "will     continue where it stopped",
        "done     2 node(s) kept as they are: undo skipped, work succeeded",
        f"waits    approval {pending['approval_id']} (gate) ok: Ship it, ana?",
        "graph    unchanged since the approval",
    ]
    assert lines[5] == f"run {run_id}: awaiting_human"


def test_an_ended_run_would_be_left_as_it_is(waiting: Scenario) -> None:
    waiting.answer_all()
    code, out = waiting.rein("resume", "--dry-run")
    assert code == 0
    assert "will     nothing: the run ended succeeded\n" in out


def test_resume_without_runs_is_run404(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: Any) -> None:
    scenario = Scenario(tmp_path, monkeypatch, capsys)
    scenario.file("g.agraph.yaml", yaml.safe_dump(GATED, sort_keys=False))
    code, out = scenario.rein("resume", "--dry-run", "--json")
    assert code == 1
    assert json.loads(out)["error"]["code"] in ("RUN404", "STORE404")


IN_FLIGHT = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/in-flight",
    "title": "in flight", "objective": "o", "requires_conformance": 3,
    "entrypoints": ["a"],
    "nodes": {
        "a": {"title": "a", "description": "a.", "x-rein-irreversible": True,
              # The first evaluation marks that it began and blocks until rein is killed;
              # the one after the resume passes at once.
              "success": {"criteria": [{"id": "ok", "kind": "command",
                                        "description": "began once",
                                        "run": "test -f began && exit 0; touch began; "
                                               "sleep 120"}]}},
        "b": {"title": "b", "description": "b.", "depends_on": ["a"]},
    },
}


@pytest.mark.timeout(120)
def test_an_attempt_in_flight_when_rein_died_is_named_as_uncertain(tmp_path: Path) -> None:
    digest = write_graph(tmp_path, IN_FLIGHT, {"nodes": {"a": [{"outputs": {}}] * 2,
                                                          "b": [{"outputs": {}}]}})
    proc = start(tmp_path, "run", "g.agraph.yaml", "--approve", digest)
    assert wait_for(lambda: (tmp_path / "began").exists() or proc.poll() is not None)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    [row] = runs(tmp_path)
    assert row["status"] == "running"
    before = event_count(tmp_path)
    shown = rein(tmp_path, "resume", "--dry-run", "--json")
    assert shown.returncode == 0, shown.stderr
    plan = json.loads(shown.stdout)
    assert plan["action"] == "recover"
    assert plan["in_flight"] == [{"node": "a", "attempt": 1, "confirm": "irreversible"}]
    assert event_count(tmp_path) == before
    said = rein(tmp_path, "resume", "--dry-run")
    assert ("uncertain a attempt 1 was in flight (its effects may have happened): a person "
            "confirms the re-run first (the node is marked irreversible)\n") in said.stdout
    # The real resume stops the orphaned criterion and asks before running `a` again.
    done = rein(tmp_path, "resume", row["run_id"], "--json")
    assert done.returncode == 3, done.stderr
