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
