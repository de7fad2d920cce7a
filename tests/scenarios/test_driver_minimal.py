"""``minimal.agraph.yaml`` driven to success by an external agent: ``rein run``, then only
``rein next``, ``rein submit`` and ``rein approvals``, in a temporary git repository."""

from __future__ import annotations

import json
import subprocess

import pytest
from support import shared_path

from rein.engine.run.record import record_problems
from tests.scenarios.harness import Scenario, summary

MINIMAL = shared_path("ags-examples", "minimal.agraph.yaml")
pytestmark = pytest.mark.skipif(MINIMAL is None, reason="../shared is not present")

GUIDE = ("# Contributing\n\nSet up with `make`, run the tests with `make test`, branch from "
         "main as `topic/<name>`, write imperative commit messages, and open a pull request "
         "against main once the tests pass.\n") * 6


def test_minimal_runs_to_success_through_next_submit_and_approvals(scenario: Scenario) -> None:
    assert MINIMAL is not None
    subprocess.run(["git", "init", "-q"], cwd=scenario.root, check=True)
    scenario.copy(MINIMAL)
    scenario.stub("npx")  # the advisory markdownlint criterion, without the network
    code, out = scenario.run("minimal.agraph.yaml")
    assert (code, summary(out)["status"]) == (3, "waiting")
    code, out = scenario.rein("next", "--json")
    instruction = json.loads(out)
    assert (code, instruction["node"], instruction["attempt"]) == (0, "draft_contributing", 1)
    assert "fs:write:CONTRIBUTING.md" in instruction["permissions"]
    assert instruction["budget"]["unenforced"] == {"max_agent_steps": 20}
    scenario.file("CONTRIBUTING.md", GUIDE)  # the driver's work
    scenario.file(".rein/inbox.json", json.dumps(instruction["example"]))
    code, out = scenario.rein("submit", "--json")
    waiting = json.loads(out)
    assert (code, waiting["status"], waiting["for"]) == (3, "waiting", "approval")
    [approval] = waiting["approvals"]
    assert approval["prompt"] == "Approve the new CONTRIBUTING.md?"
    code, _ = scenario.rein(*approval["accept"].split()[1:], "--json")
    assert code == 0
    code, out = scenario.rein("next", "--json")
    assert (code, json.loads(out)["status"]) == (0, "done")
    record = scenario.record()
    assert record["status"] == "succeeded"
    assert record["outputs"] == {"contributing_guide": "CONTRIBUTING.md"}
    [attempt] = record["nodes"][0]["attempts"]
    assert attempt["routed"]["provider"] == "driver"
    assert record_problems(record) == []
