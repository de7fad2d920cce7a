from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.harness import Scenario


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    return Scenario(tmp_path, monkeypatch, capsys)
