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
