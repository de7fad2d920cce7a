"""``--executor dbos|in-process`` on ``rein run`` and ``rein resume``: it wins over
``REIN_EXECUTOR``, and dbos without a PostgreSQL store is refused before anything is
written, with its code and a hint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.executors.cluster import map_graph
from tests.executors.test_default_path import PROBE


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str], str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    graph = ws / "map.agraph.yaml"
    graph.write_text(yaml.safe_dump(map_graph(2, 2), sort_keys=False))
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"nodes": {"w": [{"outputs": {"v": "done"}}]}}))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "x"),
           "REIN_SCRIPTED_ANSWERS": str(answers)}
    digest = subprocess.run([sys.executable, "-c", PROBE, "graph", "digest", str(graph)],
                            env=env, capture_output=True, text=True, check=True
                            ).stdout.splitlines()[0]
    return ws, graph, env, digest


def rein(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True,
                          text=True, check=False)


def test_dbos_without_a_postgresql_store_is_refused_before_anything_is_written(
        setup: tuple[Path, Path, dict[str, str], str]) -> None:
    ws, graph, env, digest = setup
    done = rein(env, "run", str(graph), "--approve", digest, "--workspace", str(ws),
                "--executor", "dbos")
    assert done.stdout.splitlines()[-1] == "NO-DBOS 64", done.stdout + done.stderr
    assert "SCALE002" in done.stderr and "--store postgresql://" in done.stderr
    assert not (ws / ".rein").exists()
    resumed = rein(env, "resume", "run-x", "--workspace", str(ws), "--executor", "dbos")
    assert "SCALE002" in resumed.stderr and resumed.stdout.splitlines()[-1] == "NO-DBOS 64"


def test_in_process_wins_over_rein_executor(
        setup: tuple[Path, Path, dict[str, str], str]) -> None:
    ws, graph, env, digest = setup
    # REIN_EXECUTOR=dbos alone is the same refusal...
    refused = rein({**env, "REIN_EXECUTOR": "dbos"}, "run", str(graph), "--approve", digest,
                   "--workspace", str(ws))
    assert "SCALE002" in refused.stderr
    # ...and --executor in-process runs here, importing no DBOS.
    done = rein({**env, "REIN_EXECUTOR": "dbos"}, "run", str(graph), "--approve", digest,
                "--workspace", str(ws), "--executor", "in-process")
    assert done.stdout.splitlines()[-1] == "NO-DBOS 0", done.stdout + done.stderr


def test_an_unknown_executor_is_a_usage_error(
        setup: tuple[Path, Path, dict[str, str], str]) -> None:
    ws, graph, env, _digest = setup
    done = rein(env, "run", str(graph), "--workspace", str(ws), "--executor", "ray")
    assert done.stdout.splitlines()[-1] == "NO-DBOS 64"
    assert "'ray' is not one of 'in-process', 'dbos'" in done.stderr
