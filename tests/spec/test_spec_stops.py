"""The flow's stops and refusals, through the command line: a document refused every time
stops the flow with its reasons (a bounded number of attempts), one approval for the whole
bundle, and coded errors for bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from devflow_support import Cli
from spec_driver import SpecDriver, drive

from rein.spec.paths import PLAN_PATH


def test_a_document_refused_every_time_stops_the_flow_with_its_reasons(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    (repo / "rein.toml").write_text("[spec]\ndocument_attempts = 2\n")
    driver = SpecDriver(repo, cli)
    driver.bundle["acceptance"]["checks"] = driver.bundle["acceptance"]["checks"][:2]
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (1, "failed"), where
    assert where["message"] == (
        "the acceptance checks (specs/active/30-acceptance.json) was refused 2 time(s); the "
        "last time: specs/active/30-acceptance.json is refused:\n- requirement(s) FR-3 are "
        "traced to no acceptance check: every requirement needs at least one")
    assert [(i["node"], i["attempt"]) for i in driver.seen][-2:] == [
        ("write_acceptance", 1), ("write_acceptance", 2)]
    assert [d["status"] for d in where["documents"]] == [
        "approved", "approved", "approved", "failed", "not run"]
    assert "rein spec start --new" in where["next_action"]
    assert not (repo / PLAN_PATH).exists()
    code, out = cli("spec", "status")
    assert code == 1 and "SPEC FLOW FAILED" in out, out


def test_one_approval_for_the_whole_bundle(repo: Path, cli: Cli,
                                           person: Callable[[str], str]) -> None:
    (repo / "rein.toml").write_text('[spec]\ngates = "bundle"\n')
    driver = SpecDriver(repo, cli)
    approved: list[str] = []
    code, where = drive(driver, lambda run: approved.append(person(run)))
    assert (code, where["reason"]) == (0, "ready"), where
    assert len(approved) == 1
    _code, shown = cli.json("approvals", "show", approved[0])
    assert sorted(shown["request"]["files"]) == sorted(
        d["path"] for d in where["documents"])
    assert json.loads((repo / PLAN_PATH).read_text())["features"]


def test_no_brief_and_a_bad_setting_are_coded_errors(repo: Path, cli: Cli) -> None:
    (repo / "rein.toml").write_text('[spec]\ngates = "each"\n')
    code, out = cli.json("spec")
    assert (code, out["error"]["code"]) == (64, "SPEC001")
    assert out["error"]["message"] == ('[spec] gates in rein.toml must be "document" (a '
                                       'person approves each document) or "bundle" (one '
                                       "approval of the whole bundle)")
    (repo / "rein.toml").unlink()
    (repo / "specs" / "brief.md").unlink()
    code, out = cli.json("spec")
    assert (code, out["error"]["code"]) == (1, "SPEC002")
    code, out = cli.json("spec", "status")
    assert (code, out["error"]["code"]) == (1, "SPEC404")
