"""Fixtures for the criteria tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from criteria_helpers import make_ctx

from rein.engine.run.criteria import CriterionContext


@pytest.fixture
def ctx_for(tmp_path: Path) -> Callable[..., CriterionContext]:
    """``ctx_for(outputs, **fields)``: a context over an empty temporary workspace."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return lambda outputs=None, **kw: make_ctx(workspace, outputs, **kw)
