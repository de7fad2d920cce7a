"""Fixtures: a fresh ``git init`` repository (no commits) with a brief, the command line,
the scripted driver, and a person who approves."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# The development flow's test helpers (its scripted driver writes the tempconv package the
# published plan describes): `rein dev` builds what `rein spec` published.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dev"))

from devflow_support import Cli, new_project


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = new_project(tmp_path / "project")
    monkeypatch.chdir(root)
    for name in ("REIN_DEV_TARGET", "REIN_DEV_VERIFY", "REIN_CONTEXT_USAGE_JSON"):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def cli(capsys: Any) -> Cli:
    return Cli(capsys)


@pytest.fixture
def person(cli: Cli) -> Callable[[str], str]:
    """A person who accepts the one pending approval of a run (the run then goes on: it
    waits for the driver's next document, exit 3, or is done, exit 0); the approval's id."""
    def accept(run_id: str) -> str:
        _code, queue = cli.json("approvals", "list", "--run", run_id)
        pending = [a for a in queue["approvals"] if a["status"] == "pending"]
        assert len(pending) == 1, queue
        code, out = cli("approvals", "accept", pending[0]["approval_id"])
        assert code in (0, 3) and "accepted" in out, out
        return str(pending[0]["approval_id"])
    return accept
