"""``rein init`` writes something to start from: a first graph, a first brief, or an example
shipped in the package; an existing file is kept, an unknown example is INIT002."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import EXAMPLES

from rein.cli import main


def _rein(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_first_graph_validates_plans_and_could_run(
        isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _rein(capsys, "init", "--graph")
    assert code == 0
    assert out.splitlines() == [
        "first.agraph.yaml: created (a first graph)",
        "next: rein graph plan first.agraph.yaml, then rein run first.agraph.yaml"]
    assert _rein(capsys, "graph", "validate", "--strict", "first.agraph.yaml")[0] == 0
    code, out, _ = _rein(capsys, "run", "first.agraph.yaml", "--dry-run")
    assert code == 0 and "dry run: the run could start" in out


def test_an_existing_file_is_kept(isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (isolated / "specs").mkdir()
    (isolated / "specs" / "brief.md").write_text("mine\n")
    code, out, _ = _rein(capsys, "init", "--brief", "--graph", "--json")
    assert code == 0
    assert [(s["path"], s["action"]) for s in json.loads(out)["starters"]] == [
        ("first.agraph.yaml", "created"), ("specs/brief.md", "kept")]
    assert (isolated / "specs" / "brief.md").read_text() == "mine\n"
    code, out, _ = _rein(capsys, "init", "--graph")
    assert out.startswith("first.agraph.yaml: kept (a first graph; it was there already")


def test_an_example_comes_with_the_documents_it_references(
        isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _rein(capsys, "init", "--example", "incident-review")[0] == 0
    for name in ("incident-review.agraph.yaml", "log-digest.agraph.yaml"):
        assert (isolated / name).read_bytes() == (EXAMPLES / name).read_bytes()
    # The child is pinned by digest: the copy validates as the checkout's does.
    assert _rein(capsys, "graph", "validate", "--strict", "incident-review.agraph.yaml")[0] == 0


def test_the_shipped_examples_are_listed(isolated: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _rein(capsys, "init", "--list-examples", "--json")
    assert code == 0
    listed = {e["name"]: e["title"] for e in json.loads(out)["examples"]}
    assert listed["no-worker"] == "Sort a release checklist without calling a model"
    assert set(listed) == {p.name.split(".")[0] for p in EXAMPLES.glob("*.yaml")}
    assert list(isolated.iterdir()) == []  # listing writes nothing


def test_an_unknown_example_is_init002_with_the_name_meant_and_nothing_written(
        isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _rein(capsys, "init", "--graph", "--example", "no-workr", "--json")
    assert code == 64
    error = json.loads(out)["error"]
    assert error["code"] == "INIT002"
    assert error["hint"].startswith("did you mean 'no-worker'?")
    assert not (isolated / "first.agraph.yaml").exists()


def test_init_with_nothing_to_write_is_a_usage_error(
        isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _rein(capsys, "init")
    assert code == 64 and "say what to write: --agent NAME, --graph, --brief" in err
