"""What a new user meets first: the runs group names every verb, and the two digest
notations are explained wherever a command prints one of them."""

from __future__ import annotations

import pytest
from support import ROOT

from rein.cli import main
from rein.cli.app import SHORT_HELP


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main([*argv, "--help"]) == 0
    return capsys.readouterr().out


def test_the_runs_group_names_cancel(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, "runs")
    assert " ".join(text.split("\n\n")[1].split()) == (
        "Inspect runs: list, show, report, cancel, watch, events, record, trace, prune.")
    assert "cancel" in SHORT_HELP["runs"]
    assert "cancel" in _help(capsys).split("runs", 2)[2].splitlines()[0]


def test_each_digest_command_points_at_the_other_notation(
        capsys: pytest.CaptureFixture[str]) -> None:
    graph = " ".join(_help(capsys, "graph", "digest").split())
    assert "sha256- and base64" in graph and "the other notation, sha256: and hex" in graph
    profile = " ".join(_help(capsys, "profile", "digest").split())
    assert "sha256:<hex>" in profile and "the other notation (sha256- and base64" in profile
    concepts = (ROOT / "docs" / "concepts.md").read_text(encoding="utf-8")
    assert "**Two digest notations.**" in concepts
