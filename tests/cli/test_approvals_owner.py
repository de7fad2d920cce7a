"""Whose question an entry of `rein approvals list` is: a run's, or, with no run yet, a
thread's graph turn asking to approve its plan (kept under the turn's id) or an ACP
client's MCP server launch (kept under its thread)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rein.engine.cases.sessions import digest, launches
from rein.store.sqlite import SQLiteStore
from tests.cli.test_run_commands import GATED
from tests.scenarios.harness import Scenario

NOW = "2026-01-01T12:00:00Z"
PLAN = {"id": "rein/tests/gated", "digest": "sha256:" + "ab" * 32}
LAUNCH = {"command": ["uvx", "mcp-server-time"], "variables": [],
          "digest": "sha256:" + "cd" * 32}


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    return Scenario(tmp_path, monkeypatch, capsys)


def _queue(scenario: Scenario) -> str:
    """A gate of a run, a graph turn's digest question and a launch; the run's id."""
    import yaml

    scenario.file("gated.agraph.yaml", yaml.safe_dump(GATED, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}]}})
    code, _ = scenario.run("gated.agraph.yaml")
    assert code == 3
    store = SQLiteStore(scenario.root / ".rein" / "rein.db")
    digest.ask(store, approval_id="apv-digest", thread_id="thr-1", turn_id="turn-2",
               graph="gated.agraph.yaml", plan=PLAN, now=NOW)
    launches.ask(store, approval_id="apv-launch", thread_id="thr-1", turn_id="turn-3",
                 server="time", launch=LAUNCH, origin="ACP client", now=NOW)
    store.close()
    return scenario.last_run()


def test_a_graph_turns_digest_question_names_its_thread_and_turn(scenario: Scenario
                                                                  ) -> None:
    run_id = _queue(scenario)
    code, out = scenario.rein("approvals", "list")
    assert code == 0
    lines = out.splitlines()
    owners = {lines[i].split()[0]: lines[i + 1].strip() for i in range(0, len(lines), 2)}
    assert owners["apv-digest"] == ("turn turn-2 of thread thr-1 · plan approval (its run "
                                    "starts once this is accepted)")
    assert owners["apv-launch"] == "thread thr-1"
    [gate] = [line for key, line in owners.items() if key not in ("apv-digest", "apv-launch")]
    assert gate == f"run {run_id}"
    assert "run turn-2" not in out  # a turn id is never shown as if it were a run's


def test_the_json_listing_adds_the_owner_and_keeps_its_fields(scenario: Scenario) -> None:
    run_id = _queue(scenario)
    code, out = scenario.rein("approvals", "list", "--json")
    assert code == 0
    rows = {a["approval_id"]: a for a in json.loads(out)["approvals"]}
    asking = rows["apv-digest"]
    assert asking["run_id"] == "turn-2"  # unchanged: where the entry is kept
    assert asking["owner"] == "turn"
    assert (asking["request"]["thread"], asking["request"]["turn"]) == ("thr-1", "turn-2")
    assert rows["apv-launch"]["owner"] == "thread"
    [gate] = [a for key, a in rows.items() if key not in ("apv-digest", "apv-launch")]
    assert (gate["owner"], gate["run_id"]) == ("run", run_id)
    assert set(gate) == {"approval_id", "run_id", "kind", "status", "digest", "request",
                         "created_at", "owner"}
