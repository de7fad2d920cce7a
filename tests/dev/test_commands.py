"""`rein dev status`, `rein dev report` and the help text, through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from devflow_support import Cli, approve
from scripted import ScriptedDriver


def test_status_reads_and_changes_nothing(repo: Path, cli: Cli) -> None:
    code, out = cli.json("dev", "status")
    assert (code, out["error"]["code"]) == (1, "DEV404")
    assert not (repo / ".rein" / "dev").exists()
    driver = ScriptedDriver(repo, cli, bad_plan_first=False)
    _code, where = driver.dev()
    driver.submit(driver.work(where["instruction"]))
    before = (repo / ".rein" / "dev" / "flow.json").read_text()
    code, status = cli.json("dev", "status")
    assert (code, status["stage"], status["reason"]) == (3, "planning", "waiting")
    assert [f["status"] for f in status["features"]] == ["planned"] * 3
    approve(cli)
    code, status = cli.json("dev", "status")  # approved, but status starts nothing
    assert (code, status["stage"], status["features_run"]) == (3, "planning", None)
    assert status["next_action"] == "run `rein dev` to start the features"
    assert (repo / ".rein" / "dev" / "flow.json").read_text() == before
    code, text = cli("dev", "status")
    assert text.startswith("DEV FLOW (planning) WAITING: the plan is approved")


def test_report_before_a_flow_says_how_to_start(repo: Path, cli: Cli) -> None:
    code, out = cli.json("dev", "report")
    assert (code, out["error"]["code"], out["error"]["hint"]) == (
        1, "DEV404", "start one with `rein dev`")


@pytest.mark.parametrize("args", [("dev",), ("dev", "start"), ("dev", "status"),
                                  ("dev", "report")])
def test_help_teaches_with_an_example_and_the_exit_codes(cli: Cli,
                                                         args: tuple[str, ...]) -> None:
    code, text = cli(*args, "--help")
    assert code == 0
    assert "Example:" in text and "Exit codes:" in text
    assert "rein dev" in text.split("Example:", 1)[1]


def test_the_planning_instruction_can_be_followed_as_written(repo: Path, cli: Cli) -> None:
    """The example plan is JSON an agent can copy, and the checker's own configuration is
    named rather than dumped into the text."""
    code, text = cli("dev")
    assert code == 0
    shape = text.split("of this shape:\n", 1)[1].split("\nThe top-level", 1)[0]
    example = json.loads(shape)
    assert set(example) == {"verify", "features"}
    assert '"max_brief_bytes"' not in text
    assert "params: (the checker's configuration, in `rein next --json`)" in text
    code, status = cli.json("next")
    [check] = status["checks"]
    assert check["params"]["params"]["settings"]["max_features"] == 20


def test_a_copied_workspace_starts_its_own_flow_and_leaves_the_originals_runs(
        repo: Path, driver: ScriptedDriver, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy's .rein/ names the original's runs: `rein dev` there is refused (RUN010,
    never run in the copy's directory), and `start --new` leaves them to the original."""
    import shutil

    code, where = driver.dev()
    assert code == 0 and where["stage"] == "planning"
    planning = where["planning_run"]
    copy = repo.parent / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    monkeypatch.chdir(copy)
    code, out = cli("dev", "--json")
    assert code == 4 and json.loads(out)["error"]["code"] == "RUN010"
    code, out = cli("dev", "start", "--new", "--json")
    fresh = json.loads(out)
    assert code == 0 and fresh["planning_run"] != planning, fresh
    assert any("left the earlier flow's run" in n for n in fresh["notices"])
    monkeypatch.chdir(repo)
    code, out = cli("dev", "--json")
    assert (code, json.loads(out)["planning_run"]) == (0, planning)  # the original goes on
