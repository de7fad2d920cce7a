"""A cancelled run leaves nothing in flight: its nodes, its open questions and its child
runs all end with it, in the store, the record and the queue, not only in a view."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.cli.test_run_commands import GATED
from tests.scenarios.harness import Scenario


@pytest.fixture
def scenario(tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    return Scenario(tmp_path, monkeypatch, capsys)


def test_cancelling_a_run_at_its_gate_ends_the_gate_and_closes_its_question(
        scenario: Scenario) -> None:
    scenario.file("gated.agraph.yaml", yaml.safe_dump(GATED, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}]}})
    assert scenario.run("gated.agraph.yaml")[0] == 3
    run_id = scenario.last_run()
    [pending] = json.loads(scenario.rein("approvals", "list", "--json")[1])["approvals"]
    assert scenario.rein("runs", "cancel", run_id, "--note", "wrong branch")[0] == 1

    shown = json.loads(scenario.rein("runs", "show", run_id, "--json")[1])
    assert shown["status"] == "cancelled"
    assert {n["node"]: n["status"] for n in shown["nodes"]}["ok"] == "cancelled"
    assert not {"running", "awaiting_human", "waiting"} & {n["status"] for n in shown["nodes"]}
    assert shown["pending_approvals"] == []
    record = json.loads(scenario.rein("runs", "record", run_id)[1])
    assert not {"running", "awaiting_human", "waiting"} & {
        n["status"] for n in record["nodes"]}
    # The gate's question is closed: an answer to it now is refused, not recorded.
    code, out = scenario.rein("approvals", "accept", pending["approval_id"], "--json")
    assert code == 4 and "APPROVAL_ANSWERED" in out
