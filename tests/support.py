"""Paths the tests share. Import from here (``from support import EXAMPLES``), never from a
conftest module: several folders have their own conftest.py, and all are named alike."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SHARED = Path(os.environ.get("REIN_SHARED_DIR", ROOT.parent / "shared"))


def shared_path(*parts: str) -> Path | None:
    """For parametrizing at import time: the path, or None when ../shared is absent."""
    p = SHARED.joinpath(*parts)
    return p if p.exists() else None


def account_files(monkeypatch: object, root: Path) -> tuple[Path, Path]:
    """Stand-ins for the files that say who may approve (``/etc/rein/rein.toml`` and the
    account's ``~/.config/rein/rein.toml``), under ``root``: ``(managed, user)``. A test
    double of :func:`rein.config.files.authority_paths`, for tests that run rein in their
    own process; a subprocess reads the real ones."""
    import pytest

    from rein.config import files

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    managed = root / "account" / "etc-rein.toml"
    user = root / "account" / "home" / ".config" / "rein" / "rein.toml"
    monkeypatch.setattr(files, "authority_paths",
                        lambda: [("managed", managed), ("user", user)], raising=False)
    return managed, user
