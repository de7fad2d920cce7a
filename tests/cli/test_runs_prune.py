"""`rein runs prune`: ended runs go with their child runs and every row of them; what a run
that has not ended needs stays, whatever the filters say; --dry-run removes nothing."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import ROOT

from rein.cli import main
from rein.cli.prune import parse_age
from rein.workers.hook_transcript import transcript_file
from tests.cli.test_run_commands import GATED
from tests.scenarios.harness import Scenario

NO_WORKER = ROOT / "examples" / "no-worker.agraph.yaml"  # has an inline subgraph: a child run


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> dict[str, str]:
    """Three runs: one succeeded (with a child run), one failed, one waiting at a gate."""
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    scenario = Scenario(tmp_path, monkeypatch, capsys)
    scenario.copy(NO_WORKER)
    assert scenario.run(NO_WORKER.name)[0] == 0
    done = scenario.last_run()
    failing = json.loads(json.dumps(GATED))
    failing["id"] = "tests/failing"
    scenario.file("failing.agraph.yaml", yaml.safe_dump(failing, sort_keys=False))
    scenario.file("gated.agraph.yaml", yaml.safe_dump(GATED, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"failure": "tool_error", "message": "broken"}],
                                "undo": [{"outputs": {}}]}})
    assert scenario.run("failing.agraph.yaml")[0] == 1
    failed = scenario.last_run()
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}]}})
    assert scenario.run("gated.agraph.yaml")[0] == 3
    waiting = scenario.last_run()
    capsys.readouterr()
    return {"done": done, "failed": failed, "waiting": waiting}


def _prune(capsys: Any, *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["runs", "prune", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _all_runs(capsys: Any) -> set[str]:
    assert main(["runs", "list", "--all", "--json"]) == 0
    return {r["run_id"] for r in json.loads(capsys.readouterr().out)["runs"]}


def test_prune_removes_ended_families_and_keeps_a_waiting_run(runs: dict[str, str],
                                                              capsys: Any) -> None:
    before = _all_runs(capsys)
    assert len(before) == 4  # the child run of the subgraph is the fourth
    # What a model worker's hooks read: each session's transcript, in a folder per run.
    written = {run: transcript_file(Path.cwd(), run, "work", 1) for run in before}
    for file in written.values():
        file.parent.mkdir(parents=True)
        file.write_text("{}\n")
    code, report = _prune(capsys, "--older-than", "0s")
    assert code == 0
    assert {r["run_id"] for r in report["removed"]} == {runs["done"], runs["failed"]}
    assert [r["child_runs"] for r in report["removed"] if r["run_id"] == runs["done"]] == [1]
    assert [(k["run_id"], k["reason"]) for k in report["kept"]] == [
        (runs["waiting"], "it has not ended (awaiting_human)")]
    assert _all_runs(capsys) == {runs["waiting"]}  # the child run went with its parent
    assert main(["runs", "events", runs["done"], "--json"]) == 1  # its events are gone
    capsys.readouterr()
    assert not (Path.cwd() / ".rein" / "locks" / f"{runs['done']}.lock").exists()
    assert [run for run, file in written.items() if file.exists()] == [runs["waiting"]]
    assert {p.name for p in (Path.cwd() / ".rein" / "transcripts").iterdir()} == {
        written[runs["waiting"]].parent.name}  # the child run's went with its parent
    # What the waiting run needs is intact: it still answers and finishes.
    assert main(["approvals", "list", "--json"]) == 0
    [pending] = json.loads(capsys.readouterr().out)["approvals"]
    assert main(["approvals", "accept", pending["approval_id"], "--json"]) == 0


def test_a_status_filter_narrows_and_a_dry_run_removes_nothing(runs: dict[str, str],
                                                               capsys: Any) -> None:
    before = _all_runs(capsys)
    kept = transcript_file(Path.cwd(), runs["failed"], "work", 1)
    kept.parent.mkdir(parents=True)
    kept.write_text("{}\n")
    code, report = _prune(capsys, "--status", "failed", "--dry-run")
    assert code == 0 and report["dry_run"] is True
    assert [r["run_id"] for r in report["removed"]] == [runs["failed"]]
    assert _all_runs(capsys) == before and kept.exists()  # a dry run removes no file
    assert main(["runs", "prune", "--status", "failed"]) == 0
    out = capsys.readouterr().out
    assert f"removed {runs['failed']}  failed" in out
    assert out.strip().endswith("removed 1 run(s) (1 with their child runs), kept 0 that "
                                "matched")
    assert _all_runs(capsys) == before - {runs["failed"]}


def test_an_age_keeps_what_is_recent(runs: dict[str, str], capsys: Any) -> None:
    code, report = _prune(capsys, "--older-than", "7d")
    assert code == 0 and report["removed"] == [] and report["kept"] == []
    assert main(["runs", "prune", "--older-than", "7d"]) == 0
    assert capsys.readouterr().out == "no run matched\n"


def test_prune_needs_a_filter_and_a_readable_age(runs: dict[str, str], capsys: Any) -> None:
    assert main(["runs", "prune"]) == 64
    assert "--older-than AGE and/or --status STATUS" in capsys.readouterr().err
    assert main(["runs", "prune", "--older-than", "a week"]) == 64
    assert "is not an age such as 7d" in capsys.readouterr().err


def test_ages() -> None:
    assert parse_age("7d") == dt.timedelta(days=7)
    assert parse_age("2w") == dt.timedelta(days=14)
    assert parse_age("90s") == dt.timedelta(seconds=90)
    with pytest.raises(ValueError, match="not an age"):
        parse_age("7")
