"""Paths the tests share. Import from here (``from support import EXAMPLES``), never from a
conftest module: several folders have their own conftest.py, and all are named alike."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SHARED = Path(os.environ.get("REIN_SHARED_DIR", ROOT.parent / "shared"))


def specs_folder_problem(path: Path) -> str | None:
    """Why ``path`` is not the specs' shared folder (None when it is). Any sibling folder
    may be named ``shared``: it counts only if it holds the official examples the tests
    read, ``ags-examples/minimal.agraph.yaml`` and ``oap-examples/``."""
    if not path.is_dir():
        return f"{path} is not present (fresh clone)"
    missing = [name for name in ("ags-examples/minimal.agraph.yaml", "oap-examples")
               if not (path / name).exists()]
    if missing:
        return (f"{path} is not the specs folder (it has no {' or '.join(missing)}): set "
                "REIN_SHARED_DIR to the folder of the AGS and OAP official examples")
    return None


SHARED_PROBLEM = specs_folder_problem(SHARED)  # None: SHARED is the specs folder


def shared_path(*parts: str) -> Path | None:
    """For parametrizing at import time: the path, or None when ../shared is absent or
    is not the specs folder."""
    p = SHARED.joinpath(*parts)
    return p if SHARED_PROBLEM is None and p.exists() else None


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
