"""Fixtures: a fresh ``git init`` repository (no commits) with a brief, the command line,
and the scripted driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from devflow_support import Cli, new_project
from scripted import ScriptedDriver


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
def driver(repo: Path, cli: Cli) -> ScriptedDriver:
    return ScriptedDriver(repo, cli)
