"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working directory, with a home and managed and user
    ``rein.toml`` paths of its own: no configuration of the machine reaches the test."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc" / "rein.toml"))
    return tmp_path
