"""``rein graph validate`` starts light: it imports the document layer and its parsers only,
builds no dataclass there, and stays within a written module budget.

Deterministic, not timed: what a fresh process has imported after validating a small graph
(``sys.modules``), against the budget below. Raise a number only with a reason: every module
is paid for on every validation, and a small graph's validation is mostly start-up.
"""

from __future__ import annotations

import json
import subprocess
import sys

from support import EXAMPLES

GRAPH = EXAMPLES / "driver-demo.agraph.yaml"
# Never on the validate path: the engine and what only runs use, the pure-Python schema
# validator (jsonschema_rs serves), the standard modules only they need, and click with the
# command table (the plain forms are answered without them: rein.cli.quick.validate).
FORBIDDEN = ("rein.engine", "rein.store", "rein.providers", "rein.workers", "rein.tools",
             "rein.profiles", "rein.telemetry", "rein.config", "rein.formats.oap",
             "rein.formats.ags.plan", "rein.formats.ags.render", "jsonschema", "openai",
             "anthropic", "mcp", "psycopg", "asyncio", "sqlite3", "subprocess", "tempfile",
             "zipfile", "importlib.resources", "click", "rein.cli.app", "rein.cli.graph",
             "difflib", "dataclasses", "inspect")
REIN_MODULES = 42  # rein.* modules imported (cli 5, core/errors 6, formats 31: the YAML reader,
# the pointer locations and the number literals they share with the JSON reader are modules
# of their own, so that a JSON-only turn skips the YAML parser; +1: rein.core.config_places,
# which finds no rein.toml whose [limits] would bound the documents, without rein.config)
ALL_MODULES = 188  # everything in sys.modules, the interpreter's own start-up included
# No class on the path is a dataclass: building one generates and compiles code, and
# importing dataclasses brings inspect, ast, dis and tokenize (rein.core.frozen instead).
DATACLASSES = 0

_PROBE = """
import json, sys
from rein.cli import main
code = main(["graph", "validate", "--json", sys.argv[1]])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _imported() -> list[str]:
    probe = subprocess.run([sys.executable, "-c", _PROBE, str(GRAPH)], check=False,
                           capture_output=True, text=True)
    seen = json.loads(probe.stderr.strip().splitlines()[-1])
    assert seen["code"] == 0, probe.stdout  # the graph validated, clean
    assert json.loads(probe.stdout)["documents"][0]["findings"] == []
    modules: list[str] = seen["modules"]
    return modules


def test_rein_graph_validate_imports_neither_the_engine_nor_a_python_schema_validator() -> None:
    modules = _imported()
    loaded = [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert loaded == []


def test_rein_graph_validate_stays_within_its_module_budget() -> None:
    modules = _imported()
    ours = [m for m in modules if m == "rein" or m.startswith("rein.")]
    assert len(ours) <= REIN_MODULES, ours
    assert len(modules) <= ALL_MODULES, len(modules)


def test_the_validate_path_builds_no_dataclass() -> None:
    probe = ("import dataclasses, io, contextlib, json, sys\n"
             "from rein.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    main(['graph', 'validate', sys.argv[1]])\n"
             "found = sorted(f'{n}.{k}' for n, m in list(sys.modules.items())\n"
             "               if n.startswith('rein.formats') for k, v in vars(m).items()\n"
             "               if isinstance(v, type) and dataclasses.is_dataclass(v)\n"
             "               and v.__module__ == n)\n"
             "print(json.dumps(found))\n")
    out = subprocess.run([sys.executable, "-c", probe, str(GRAPH)], check=True,
                         capture_output=True, text=True).stdout
    found = json.loads(out.strip().splitlines()[-1])
    assert len(found) <= DATACLASSES, found
