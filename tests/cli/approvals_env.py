"""Helpers of the approval tests: a run waiting at a gate, an answer given by a process of
its own (under a sandbox), and the checks that nothing was recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_run_commands import GATED
from tests.scenarios.harness import Scenario

REIN = Path(sys.executable).parent / "rein"


def gated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, *,
          after: bool = False) -> Scenario:
    """A workspace (``ws``) with the gated graph and its scripted answers, no approver
    file read; ``after``: with a node that runs once the gate is passed."""
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    root = tmp_path / "ws"
    root.mkdir()
    scenario = Scenario(root, monkeypatch, capsys)
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    graph = json.loads(json.dumps(GATED))
    answers: dict[str, Any] = {"work": [{"outputs": {}}], "undo": [{"outputs": {}}]}
    if after:
        graph["nodes"]["after"] = {"title": "after", "description": "After the gate.",
                                   "depends_on": ["ok"]}
        answers["after"] = [{"outputs": {}}]
    scenario.file("g.agraph.yaml", yaml.safe_dump(graph, sort_keys=False))
    scenario.answers({"nodes": answers})
    return scenario


def gated_waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
                  ) -> tuple[Scenario, str]:
    """A run waiting at its gate, and the gate's approval id."""
    scenario = gated(tmp_path, monkeypatch, capsys)
    code, _ = scenario.run("g.agraph.yaml")
    assert code == 3
    [pending] = scenario.pending()
    return scenario, str(pending["approval_id"])


def answer_in(sandbox: Sequence[str], scenario: Scenario, approval_id: str, verb: str = "accept",
              env: dict[str, str] | None = None, command: str | None = None
              ) -> tuple[int, dict[str, Any]]:
    """``rein approvals VERB ID --json`` as its own process under ``sandbox`` (a prefix of
    argv; ``command``: the whole command as one string, for a sandbox that takes one), with
    no terminal: its exit code and its one JSON object."""
    argv = [str(REIN), "approvals", verb, approval_id, "--no-continue", "--json"]
    done = subprocess.run(
        [*sandbox, *([command] if command is not None else argv)],
        cwd=scenario.root, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, **(env or {})}, start_new_session=True)
    return done.returncode, json.loads(done.stdout or "{}") if done.stdout.strip() else {
        "stderr": done.stderr}


def nothing_recorded(scenario: Scenario, approval_id: str) -> None:
    assert [a["approval_id"] for a in scenario.pending()] == [approval_id]
    code, out = scenario.rein("runs", "events", "--json")
    answered = [json.loads(line) for line in out.splitlines()
                if '"approval/answered"' in line and approval_id in line]
    assert code == 0 and answered == []


def refused(code: int, out: dict[str, Any]) -> None:
    assert code == 4, out
    error = out["error"]
    assert error["code"] == "APPROVAL003"
    assert "no-new-privileges" in error["message"] and "nothing was recorded" in error["message"]
