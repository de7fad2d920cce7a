"""The Python example in docs/acp.md runs, as written, against ``rein acp`` in a workspace
configured the way the page says (the scripted provider and its turns)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from support import ROOT

from tests.acp_agent.client import acp  # noqa: F401 - skips without the SDK
from tests.appserver.serve import environment

DOC = ROOT / "docs" / "acp.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text()) if lang == kind]


def example(root: Path, which: int) -> str:
    """Run the page's ``which``-th Python example in ``root``, configured as the page says;
    its output."""
    [toml] = blocks("toml")
    [turns] = blocks("json")
    (root / "rein.toml").write_text(toml)
    (root / "turns.json").write_text(json.dumps(json.loads(turns)))
    (root / "example.py").write_text(blocks("python")[which])
    # `rein` on PATH, as for a user who installed it.
    env = {**environment(root),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])}
    done = subprocess.run([sys.executable, "example.py"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_example_runs(tmp_path: Path) -> None:
    out = example(tmp_path, 0)
    assert "asked: shell_exec" in out and "['allow_once', 'allow_always'" in out
    assert "tool: echo hello pending" in out and "completed" in out
    assert "agent: it said hello" in out
    assert "modes: ['read-only', 'workspace-write', 'danger-full-access']" in out
    assert out.strip().endswith("stop: end_turn")


def test_the_terminal_example_runs_the_command_in_the_editors_terminal(tmp_path: Path
                                                                        ) -> None:
    assert len(blocks("python")) == 2
    out = example(tmp_path, 1)
    assert "terminal: echo hello" in out and "released: t0" in out
    assert "agent: it said hello" in out
    assert out.strip().endswith("stop: end_turn")
