"""Usage errors: exit 64, the text on stderr, and with --json one JSON object on stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main


@pytest.mark.parametrize("args, says", [
    (["graph", "plan", "--format", "png", "x.agraph.yaml", "--json"], "'png' is not one of"),
    (["graph", "nosuch", "--json"], "No such command 'nosuch'"),
    (["run", ".", "--json"], "is a directory"),
    (["runs", "show", "a", "b", "--json"], "Got unexpected extra argument (b)"),
])
def test_a_usage_error_under_json_is_one_json_object(
        args: list[str], says: str, workspace: Path, capsys: Any) -> None:
    assert main(args) == 64
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert error["code"] == "USAGE" and says in error["message"]
    assert error["hint"].startswith("see `rein ") and error["hint"].endswith(" --help`")
    assert says in captured.err  # people still read the usage text


def test_a_usage_error_without_json_leaves_stdout_empty(workspace: Path, capsys: Any) -> None:
    assert main(["graph", "plan", "--format", "png", "x.agraph.yaml"]) == 64
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Invalid value for '--format'" in captured.err


@pytest.mark.parametrize("as_json", [False, True])
def test_a_workspace_rein_cannot_write_is_an_error_not_a_traceback(
        as_json: bool, workspace: Path, capsys: Any) -> None:
    (workspace / "plain-file").write_text("not a folder\n")
    unwritable = workspace / "plain-file" / "ws"  # below a file: every write fails
    args = ["init", "--agent", "claude", "--workspace", str(unwritable)]
    assert main(args + (["--json"] if as_json else [])) == 1
    captured = capsys.readouterr()
    if as_json:
        error = json.loads(captured.out)["error"]
    else:
        assert captured.err.startswith("error: OS_ERROR: ")
        assert "Traceback" not in captured.err
        error = {"code": "OS_ERROR", "message": captured.err}
    assert error["code"] == "OS_ERROR"
    assert f"{unwritable}: Not a directory" in error["message"]
