"""`rein init --agent ...` writes each agent's adapter, and each one teaches `rein dev`."""

from __future__ import annotations

from pathlib import Path

import pytest
from devflow_support import Cli

PATHS = {"claude": "CLAUDE.md", "codex": "AGENTS.md",
         "copilot": ".github/copilot-instructions.md", "devin": ".devin/workflows/rein.md",
         "kimi": ".kimi/agents/rein.md"}


@pytest.mark.parametrize("agent", sorted(PATHS))
def test_each_adapter_teaches_the_development_flow(agent: str, tmp_path: Path,
                                                   cli: Cli) -> None:
    code, out = cli.json("init", "--agent", agent, "--workspace", str(tmp_path))
    assert code == 0
    assert out["files"] == [{"agent": agent, "path": PATHS[agent], "action": "created"}]
    text = " ".join((tmp_path / PATHS[agent]).read_text().split())
    assert "## The development flow (`rein dev`)" in text
    assert "run `.rein/bin/rein dev`" in text
    assert "only `rein dev` saying `done` ends the flow" in text
    assert "never commit" in text
    # A failed answer is said to be retried, and what it costs once the attempts are spent.
    assert ("rein asks for the feature again, with your message as feedback, until its "
            "attempts (`[dev] steps_per_feature`) are spent; then the flow stops `failed`, "
            "and going on needs a new plan that a person approves") in text
    # WAITING: show the command and stop, then `rein dev` once answered; never "stop" for
    # good and "run rein dev again" for the same word.
    assert ("When rein says WAITING for an approval (the plan), show the person the printed "
            "command and stop; once they have answered, run `.rein/bin/rein dev` again") \
        in text
    assert "Whenever rein says DONE or WAITING" not in text
    assert ("DONE (exit 0): if its message names `rein dev` or `rein spec` to run for what "
            "comes next, run that; otherwise stop") in text
    again = cli.json("init", "--agent", agent, "--workspace", str(tmp_path))[1]
    assert again["files"][0]["action"] == "unchanged"
