"""`rein graph plan --format svg` (Graphviz, or DRAW001 saying how to get it) and
`rein runs show --format mermaid|dot|svg` (a run's nodes coloured by state)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import EXAMPLES

from rein.cli import main
from tests.scenarios.harness import Scenario, summary

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz is not installed (scripts/system-deps.sh)")


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    return Scenario(tmp_path, monkeypatch, capsys)


@needs_dot
def test_plan_as_svg(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "release-train.agraph.yaml")
    assert main(["graph", "plan", "--format", "svg", path]) == 0
    out = capsys.readouterr().out
    assert out.startswith("<?xml") and "<title>assess_risk</title>" in out
    assert ">risky</text>" in out and ">Legend</text>" in out


def test_svg_without_graphviz_says_how_to_get_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no dot on it
    code = main(["graph", "plan", "--format", "svg", str(EXAMPLES / "no-worker.agraph.yaml")])
    got = capsys.readouterr()
    assert code == 4 and got.out == ""
    assert "DRAW001: drawing SVG needs Graphviz's `dot`, which is not on PATH" in got.err
    assert "hint: install Graphviz (Debian/Ubuntu: apt-get install graphviz;" in got.err


def test_a_finished_run_is_drawn_with_every_node_succeeded(scenario: Scenario) -> None:
    scenario.copy(EXAMPLES / "no-worker.agraph.yaml", "g.agraph.yaml")
    code, out = scenario.run("g.agraph.yaml")
    assert code == 0, out
    code, mermaid = scenario.rein("runs", "show", summary(out)["run_id"], "--format", "mermaid")
    assert code == 0
    assert re.search(r'"bucket<br/>[^"]*<br/>succeeded ×5"\}:::succeeded', mermaid)
    assert re.search(r'"tell<br/>[^"]*<br/>succeeded"\}\}:::succeeded', mermaid)  # a child
    assert ":::not_reached" not in mermaid and "classDef succeeded" in mermaid


GATED = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/gated", "title": "gated",
    "objective": "test", "requires_conformance": 3, "entrypoints": ["ok"],
    "nodes": {"ok": {"type": "gate", "title": "ok", "description": "Approve.",
                     "gate": {"mode": "approve", "prompt": "Ship it?"}},
              "after": {"title": "after", "description": "Then this.", "depends_on": ["ok"]}},
}


def test_a_waiting_run_shows_what_waits_and_what_is_not_reached(scenario: Scenario) -> None:
    scenario.file("g.agraph.yaml", yaml.safe_dump(GATED))
    code, out = scenario.run("g.agraph.yaml")
    assert code == 3, out
    run_id = summary(out)["run_id"]
    code, dot = scenario.rein("runs", "show", run_id, "--format", "dot")
    assert code == 0
    assert re.search(r'"ok" \[label="ok\\nok\\nawaiting_human", shape=hexagon, '
                     r'style="rounded,filled", fillcolor="#fef08a"', dot)
    assert re.search(r'"after" \[label="after\\nafter\\nnot reached", shape=box, '
                     r'style="rounded,filled,dashed"', dot)
    code, _ = scenario.rein("runs", "show", run_id, "--format", "dot", "--json")
    assert code == 64


def test_a_run_whose_graph_is_gone_cannot_be_drawn(scenario: Scenario) -> None:
    scenario.file("g.agraph.yaml", yaml.safe_dump(GATED))
    _, out = scenario.run("g.agraph.yaml")
    (scenario.root / "g.agraph.yaml").unlink()
    code = main(["runs", "show", summary(out)["run_id"], "--format", "mermaid", "--json"])
    assert code == 64  # --json with a picture is a usage error before anything is read
    code = main(["runs", "show", summary(out)["run_id"], "--format", "mermaid"])
    assert code == 1
    assert "DRAW003" in scenario.capsys.readouterr().err


def test_a_record_file_is_not_drawn(scenario: Scenario) -> None:
    scenario.file("record.json", "{}")
    code, _ = scenario.rein("runs", "show", "record.json", "--format", "mermaid")
    assert code == 64
