"""A driver turn stays light: ``rein next`` reads the store and the driver's status, and
imports none of the engine's execution, no JSON Schema validator and no provider SDK.

Deterministic, not timed: what a fresh process has imported after ``rein next`` printed an
instruction (``sys.modules``), against a written budget.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from support import ROOT

DEMO = ROOT / "examples" / "driver-demo.agraph.yaml"
# What `rein next` must never import, whatever it prints.
FORBIDDEN = ("rein.engine.runner", "rein.engine.execution", "rein.engine.scheduler",
             "rein.engine.kinds", "rein.engine.prepare", "jsonschema", "jsonschema_rs",
             "openai", "anthropic", "mcp", "psycopg")

_PROBE = """
import json, sys
from rein.cli import main
code = main(["next", "--json"])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def test_rein_next_imports_no_execution_module_nor_a_provider_sdk(tmp_path: Path) -> None:
    shutil.copy(DEMO, tmp_path / DEMO.name)
    rein = str(Path(sys.executable).parent / "rein")
    digest = subprocess.run([rein, "graph", "digest", DEMO.name], cwd=tmp_path, check=True,
                            capture_output=True, text=True).stdout.strip()
    started = subprocess.run([rein, "run", DEMO.name, "--approve", digest], cwd=tmp_path,
                             check=False, capture_output=True, text=True)
    assert started.returncode == 3, started.stderr  # waiting for the driver
    probe = subprocess.run([sys.executable, "-c", _PROBE], cwd=tmp_path, check=False,
                           capture_output=True, text=True)
    seen = json.loads(probe.stderr.strip().splitlines()[-1])
    assert seen["code"] == 3  # an instruction was printed
    assert '"status": "instruction"' in probe.stdout
    loaded = [m for m in seen["modules"]
              if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert loaded == []
