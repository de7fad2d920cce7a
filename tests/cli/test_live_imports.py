"""rich draws the live view and nothing else: the modules `rein next`, `rein submit` and
`--help` load never import it (only a terminal that gets the redrawing view does)."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
import rein.cli.app, rein.cli.run, rein.cli.runs, rein.cli.driver, rein.cli.approvals
from rein.cli import main
main(["--help"])
main(["runs", "--help"])
print(json.dumps(sorted(m for m in sys.modules if m == "rich" or m.startswith("rich."))),
      file=sys.stderr)
"""


def test_no_cli_module_imports_rich_until_a_terminal_needs_it() -> None:
    probe = subprocess.run([sys.executable, "-c", _PROBE], check=False, capture_output=True,
                           text=True)
    assert json.loads(probe.stderr.strip().splitlines()[-1]) == []
