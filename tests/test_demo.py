"""`make run` (scripts/demo.sh) prints each run's header once, and names the folder its
scratch workspaces are kept in, with the command that removes it: nothing is left behind
unannounced. Run for real with this environment's rein, its temporary folder under
``tmp_path``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

REIN = Path(sys.executable).with_name("rein")

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or not REIN.exists(),
                                reason="needs bash and the rein command of this environment")


def test_the_demo_prints_each_header_once_and_names_what_it_keeps(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), "REIN": str(REIN)}
    env.pop("NO_COLOR", None)
    done = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    headers = [line for line in out.splitlines() if line.startswith("graph   ")]
    assert headers == [("graph   rein/examples/no-worker: Sort a release checklist without "
                       "calling a model"),
                       ("graph   rein/examples/driver-demo: Write a tiny module, prove it "
                       "works, have a person approve it")]
    kept = sorted(tmp_path.iterdir())
    assert len(kept) == 1, kept  # both workspaces in one folder
    assert done.stdout.rstrip().endswith(f"remove them with: rm -rf {kept[0]}")
    assert sorted(p.name for p in kept[0].iterdir()) == ["driver-demo", "no-worker"]
