"""Fixtures: an isolated configuration (no managed or user rein.toml of this machine takes
part, nor the account's approvals of evaluations) and an empty workspace as the current
folder, where evaluations are kept."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc" / "rein.toml"))
    monkeypatch.delenv("REIN_USER_CONFIG", raising=False)
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    from support import account_files

    account_files(monkeypatch, tmp_path)
    monkeypatch.chdir(root)
    return root
