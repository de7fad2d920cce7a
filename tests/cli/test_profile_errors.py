"""``rein profile`` on files that are not profiles: a reason, and one JSON object under --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main


@pytest.mark.parametrize("command", ["digest", "history"])
@pytest.mark.parametrize("name, code", [("empty.agent.yaml", "OAP001"),
                                        ("missing.agent.yaml", "OAP001")])
def test_an_invalid_file_under_json_is_one_object_with_its_findings(
        command: str, name: str, code: str, workspace: Path, capsys: Any) -> None:
    (workspace / "empty.agent.yaml").write_text("")
    assert main(["profile", command, name, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["path"] == name
    assert out["error"]["code"] == code and out["error"]["hint"]
    assert [f["code"] for f in out["findings"]] == [code]


def test_validate_says_when_a_folder_holds_no_profile(workspace: Path, capsys: Any) -> None:
    (workspace / "empty").mkdir()
    assert main(["profile", "validate", "empty"]) == 1
    captured = capsys.readouterr()
    assert captured.err == ("error: no profiles (*.agent.yaml|json|md) or deltas "
                            "(*.delta.yaml|json) in empty\n")
    assert captured.out == ""
