"""`rein init --agent ...` writes each agent's adapter, and each one teaches `rein spec`."""

from __future__ import annotations

from pathlib import Path

import pytest
from devflow_support import Cli

PATHS = {"claude": "CLAUDE.md", "codex": "AGENTS.md",
         "copilot": ".github/copilot-instructions.md", "devin": ".devin/workflows/rein.md",
         "kimi": ".kimi/agents/rein.md"}


@pytest.mark.parametrize("agent", sorted(PATHS))
def test_each_adapter_teaches_the_specification_flow(agent: str, tmp_path: Path,
                                                     cli: Cli) -> None:
    code, _out = cli.json("init", "--agent", agent, "--workspace", str(tmp_path))
    assert code == 0
    text = " ".join((tmp_path / PATHS[agent]).read_text().split())
    assert "## The specification flow (`rein spec`)" in text
    assert "run `.rein/bin/rein spec`" in text
    assert "only `rein spec` saying `ready` ends it" in text
    assert "then run `.rein/bin/rein dev`, which builds it without a planning turn" in text
    assert "(`DEV010`: the specification changed since it was published)" in text
