"""An input gate accepted without the value it requires (or with one of the wrong type) is
refused before anything is recorded (APPROVAL002): accepted as it was, the gate would fail
its run. Every surface answers through the same engine call; here, `rein approvals`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rein.cli import main

INPUT = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/input-values",
    "title": "input", "objective": "test", "requires_conformance": 3, "entrypoints": ["ask"],
    "nodes": {"ask": {"type": "gate", "title": "ask", "description": "Ask.", "gate": {
        "mode": "input", "prompt": "How many?",
        "collect": {"count": {"type": "integer", "description": "How many."},
                    "label": {"type": "string", "description": "A label.",
                              "default": "none"}}}}},
}


@pytest.fixture(autouse=True)
def _isolated(isolated: Path) -> None:
    """No configuration of the machine reaches the test (tests/cli/conftest.py)."""


def rein(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_a_missing_or_mistyped_value_is_refused_and_nothing_is_recorded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "g.agraph.yaml").write_text(yaml.safe_dump(INPUT))
    digest = rein(capsys, "graph", "digest", "g.agraph.yaml")[1].strip()
    code, out = rein(capsys, "run", "g.agraph.yaml", "--approve", digest, "--json")
    assert code == 3
    run_id = json.loads(out.splitlines()[-1])["run_id"]
    (pending,) = json.loads(rein(capsys, "approvals", "list", "--json")[1])["approvals"]
    approval = pending["approval_id"]

    code, out = rein(capsys, "approvals", "accept", approval, "--json")
    error = json.loads(out)["error"]
    assert (code, error["code"]) == (4, "APPROVAL002")
    assert "count is required" in error["message"] and "label" not in error["message"]
    assert f"rein approvals accept {approval} --value NAME=VALUE" in error["hint"]
    code, out = rein(capsys, "approvals", "accept", approval, "--value", "count=many",
                     "--json")
    assert (code, json.loads(out)["error"]["code"]) == (4, "APPROVAL002")
    (still,) = json.loads(rein(capsys, "approvals", "list", "--json")[1])["approvals"]
    assert still["status"] == "pending"

    # Given its value, the gate is accepted and the run goes on to its end.
    code, out = rein(capsys, "approvals", "accept", approval, "--value", "count=3", "--json")
    assert code == 0, out
    record = json.loads(rein(capsys, "runs", "record", run_id)[1])
    assert record["status"] == "succeeded"
