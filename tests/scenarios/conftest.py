from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.harness import Scenario

# Every role the example graphs' gates and checkpoints ask for: the scenarios' person holds
# them all (tests of role refusals name their own approver).
EXAMPLE_ROLES = ("maintainer", "release-manager", "on-call", "incident-owner", "docs-owner")


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    scenario = Scenario(tmp_path, monkeypatch, capsys)
    scenario.approver("ann", *EXAMPLE_ROLES)
    return scenario
