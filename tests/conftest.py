"""Shared fixtures. Tests that read ../shared skip cleanly when it is absent (a fresh clone)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SHARED = Path(os.environ.get("REIN_SHARED_DIR", ROOT.parent / "shared"))

# No test may reach a real model API; the model layer checks this switch.
os.environ.setdefault("REIN_ALLOW_MODEL_REQUESTS", "0")


@pytest.fixture
def shared_dir() -> Path:
    """The team's shared folder (spec digests and official examples), or skip."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present (fresh clone)")
    return SHARED


def shared_path(*parts: str) -> Path | None:
    """For parametrizing at import time: the path, or None when ../shared is absent."""
    p = SHARED.joinpath(*parts)
    return p if p.exists() else None


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace as the current directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
