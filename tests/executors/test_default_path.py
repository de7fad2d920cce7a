"""Scale-out costs nothing when off: the embedded default never imports DBOS, and the
executor is chosen only by ``[executor]`` or ``REIN_EXECUTOR``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rein.errors import ConfigError
from rein.executors import IN_PROCESS, executor_for
from tests.executors.cluster import map_graph

PROBE = """
import sys
from rein.cli import main
code = main(sys.argv[1:])
print("DBOS-IMPORTED" if any(m == "dbos" or m.startswith("dbos.") for m in sys.modules)
      else "NO-DBOS", code)
"""


def test_rein_run_with_the_embedded_defaults_imports_no_dbos(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    graph = ws / "map.agraph.yaml"
    graph.write_text(yaml.safe_dump(map_graph(3, 2), sort_keys=False))
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"nodes": {"w": [{"outputs": {"v": "done"}}]}}))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "REIN_SCRIPTED_ANSWERS": str(answers),
           "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    digest = subprocess.run([sys.executable, "-c", PROBE, "graph", "digest", str(graph)],
                            env=env, capture_output=True, text=True, check=True
                            ).stdout.splitlines()[0]
    done = subprocess.run([sys.executable, "-c", PROBE, "run", str(graph), "--approve", digest,
                           "--workspace", str(ws)], env=env, capture_output=True, text=True,
                          check=False)
    assert done.stdout.splitlines()[-1] == "NO-DBOS 0", done.stdout + done.stderr


def test_in_process_is_the_default_and_hands_the_workers_back() -> None:
    workers = (object(),)
    executor = executor_for({}, {}, store=None)
    assert executor is IN_PROCESS
    assert executor.place(workers) is workers  # type: ignore[arg-type]


def test_the_dbos_executor_needs_a_postgresql_store() -> None:
    with pytest.raises(ConfigError) as err:
        executor_for({"executor": {"kind": "dbos"}}, {}, store=None)
    assert err.value.code == "SCALE002"


def test_an_unknown_executor_kind_is_a_usage_error() -> None:
    with pytest.raises(ConfigError) as err:
        executor_for({}, {"REIN_EXECUTOR": "ray"}, store=None)
    assert err.value.code == "SCALE001" and "ray" in str(err.value)
