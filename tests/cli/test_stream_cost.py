"""What printing an event stream costs, counted rather than timed: how often the process
environment is scanned for secrets. Once per command, however many events it prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.cli import output
from rein.formats.redaction import Secrets
from tests.scenarios.harness import Scenario, summary

SECRET = "s3cr3t-Value-For-Streams-7"


def chain(n: int) -> dict[str, Any]:
    nodes = {f"n{i}": {"title": f"n{i}", "description": "work",
                       **({"depends_on": [f"n{i - 1}"]} if i else {})} for i in range(n)}
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/stream",
            "title": "stream", "objective": "count scans", "requires_conformance": 3,
            "entrypoints": ["n0"], "nodes": nodes}


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the printing scanned the environment, one entry per scan."""
    seen: list[int] = []
    real = output.known_secrets

    def counting(env: Any, *rest: Any) -> Secrets:
        seen.append(1)
        return real(env, *rest)

    monkeypatch.setattr(output, "known_secrets", counting)
    return seen


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.setenv("REIN_SECRET_STREAMED", SECRET)
    return Scenario(tmp_path, monkeypatch, capsys)


def test_a_streamed_run_scans_the_environment_once(scenario: Scenario,
                                                   scans: list[int]) -> None:
    n = 30
    scenario.file("g.agraph.yaml", yaml.safe_dump(chain(n), sort_keys=False))
    scenario.answers({"nodes": {f"n{i}": [{"outputs": {"note": SECRET}}] for i in range(n)}})
    code, out = scenario.run("g.agraph.yaml")
    assert code == 0 and summary(out)["status"] == "succeeded"
    lines = out.strip().splitlines()
    assert len(lines) > 2 * n  # every node's start and end at least, one line each
    assert SECRET not in out
    run_id = summary(out)["run_id"]
    scans.clear()  # the digest and the run were two commands, one scan each at most
    code, out = scenario.rein("runs", "events", run_id, "--json")
    assert code == 0 and len(out.strip().splitlines()) > 2 * n
    assert SECRET not in out
    assert len(scans) == 1, len(scans)


def test_a_run_s_stream_scans_once_per_command(scenario: Scenario, scans: list[int]) -> None:
    n = 30
    scenario.file("g.agraph.yaml", yaml.safe_dump(chain(n), sort_keys=False))
    scenario.answers({"nodes": {f"n{i}": [{"outputs": {}}] for i in range(n)}})
    code, digest = scenario.rein("graph", "digest", "g.agraph.yaml")
    assert code == 0
    scans.clear()
    code, out = scenario.rein("run", "g.agraph.yaml", "--approve", digest.strip(), "--json")
    assert code == 0 and len(out.strip().splitlines()) > 2 * n
    assert len(scans) == 1, len(scans)


def test_each_command_reads_the_environment_it_starts_with(
        scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = scenario.rein("graph", "digest", f"{SECRET}.agraph.yaml", "--json")
    assert code != 0 and SECRET not in out
    later = "an0ther-Secret-Set-Later-9"
    monkeypatch.setenv("REIN_SECRET_LATER", later)
    code, out = scenario.rein("graph", "validate", "--json", f"{later}.agraph.yaml")
    assert code != 0
    assert later not in out
    assert json.loads(out)["documents"][0]["path"] == "[secret:later].agraph.yaml"
