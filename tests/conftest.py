"""Shared fixtures. Tests that read ../shared skip cleanly when it is absent (a fresh clone)
or is not the specs folder (any sibling folder may be named shared).

Import paths and helpers from ``support`` (``from support import EXAMPLES``), not from
``conftest``: several folders have a conftest.py and the names collide.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import EXAMPLES, ROOT, SHARED, shared_path  # noqa: F401 - re-exported

# No test may reach a real model API; the model layer checks this switch.
os.environ.setdefault("REIN_ALLOW_MODEL_REQUESTS", "0")


@pytest.fixture(autouse=True)
def _no_account_approvers(tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own approver files (``/etc/rein/rein.toml``, the account's
    ``~/.config/rein/rein.toml``) never reach a test run in this process; a test that needs
    an approver names one with ``support.account_files``."""
    from support import account_files

    account_files(monkeypatch, tmp_path_factory.getbasetemp() / "no-approvers")


@pytest.fixture
def shared_dir() -> Path:
    """The team's shared folder (spec digests and official examples), or skip."""
    from support import SHARED_PROBLEM

    if SHARED_PROBLEM is not None:
        pytest.skip(SHARED_PROBLEM)
    return SHARED


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace as the current directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
