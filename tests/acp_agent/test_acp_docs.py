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


def test_the_example_runs(tmp_path: Path) -> None:
    [toml] = blocks("toml")
    [turns] = blocks("json")
    [example] = blocks("python")
    (tmp_path / "rein.toml").write_text(toml)
    (tmp_path / "turns.json").write_text(json.dumps(json.loads(turns)))
    (tmp_path / "example.py").write_text(example)
    # `rein` on PATH, as for a user who installed it.
    env = {**environment(tmp_path),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])}
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "asked: shell_exec" in out and "['allow_once', 'allow_always'" in out
    assert "tool: echo hello in_progress" in out and "completed" in out
    assert "agent: it said hello" in out
    assert "modes: ['read-only', 'workspace-write', 'danger-full-access']" in out
    assert out.strip().endswith("stop: end_turn")
