"""`rein runs show` says why a node failed: the last attempt's error and failed criteria."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.cli.record_view import why_lines
from tests.scenarios.harness import Scenario


def test_failed_node_shows_error_and_failed_required_criteria() -> None:
    record = {
        "status": "failed",
        "attempts": [
            {"attempt": 1, "error": "criteria_failed: first"},
            {
                "attempt": 2,
                "error": "criteria_failed: success criteria failed",
                "success": {"results": [
                    {"id": "ok", "kind": "file_exists", "passed": True, "severity": "required"},
                    {"id": "bullets", "kind": "command", "passed": False,
                     "severity": "required", "evidence": '{"exit_code":1}'},
                    {"id": "style", "kind": "regex", "passed": False, "severity": "advisory",
                     "evidence": "no match"},
                ]},
            },
        ],
    }
    assert why_lines(record) == [
        "attempt 2: criteria_failed: success criteria failed",
        'criterion bullets (command) failed: {"exit_code":1}',
    ]


def test_long_evidence_is_clipped_and_succeeded_nodes_say_nothing() -> None:
    record = {"status": "blocked", "attempts": [{"attempt": 1, "success": {"results": [
        {"id": "c", "kind": "command", "passed": False, "evidence": "x" * 500}]}}]}
    (line,) = why_lines(record)
    assert line.endswith("...") and len(line) < 220
    assert why_lines({"status": "succeeded", "attempts": [{"error": "old"}]}) == []


def test_a_node_refused_before_it_starts_says_which_rule_refused_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """A blocked node has no attempt to explain it: the refusal itself is shown, by `rein
    runs show` and in the driver's stop, instead of a bare "could not start"."""
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    s = Scenario(tmp_path, monkeypatch, capsys)
    s.file("rein.toml", '[policy]\nshell = "deny"\n')
    s.file("g.agraph.yaml", yaml.safe_dump({
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/refused", "title": "t",
        "objective": "o", "requires_conformance": 3, "constraints": {"max_cost_usd": 1.0},
        "entrypoints": ["a"],
        "nodes": {"a": {"title": "a", "description": "Test it.",
                        "requirements": {"permissions": ["shell:exec:pytest*"]}}}}))
    code, _ = s.run("g.agraph.yaml")
    assert code == 1
    code, out = s.rein("runs", "show")
    assert "blocked" in out and "PERM002: node a asks for" in out
    assert "policy.shell is deny" in out
    code, out = s.rein("next")
    assert code == 1 and "node(s) a could not start (failed): PERM002: node a asks" in out
