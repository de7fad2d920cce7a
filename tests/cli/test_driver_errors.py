"""``rein next`` / ``rein submit`` on a workspace whose store is damaged: an error, no traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rein.cli import main


def test_next_on_a_damaged_store_is_a_store_error(workspace: Path, capsys: Any) -> None:
    (workspace / ".rein").mkdir()
    (workspace / ".rein" / "rein.db").write_text("this is not a database\n")
    assert main(["next"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: STORE001: cannot read the run store ")
    assert "move .rein/ aside" in err
    assert main(["next", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "STORE001"


def test_submit_of_a_missing_file_points_at_that_file(workspace: Path, capsys: Any) -> None:
    assert main(["submit", "answer.json", "--json"]) == 4
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "DRIVER_NO_ENVELOPE"
    assert error["message"] == f"no envelope at {workspace.resolve() / 'answer.json'}"
    assert error["hint"] == "check the file's path, or leave it out to read .rein/inbox.json"
