"""`rein spec` from a brief to READY, then `rein dev` builds the product from the published
plan: one session through the real command line, driven by a scripted agent."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devflow_support import Cli
from scripted import git
from spec_driver import SpecDriver, drive

from rein.spec.paths import PLAN_PATH


def no_fit_criterion(doc: dict[str, Any]) -> None:
    del doc["requirements"][1]["fit_criterion"]


def test_a_brief_becomes_a_published_plan_that_rein_dev_builds(
        repo: Path, cli: Cli, person: Callable[[str], str], tmp_path: Path) -> None:
    driver = SpecDriver(repo, cli, refuse_first={"requirements": no_fit_criterion})
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    assert [d["status"] for d in where["documents"]] == ["approved"] * 5
    turns = [(i["node"], i["attempt"]) for i in driver.seen]
    assert turns == [("write_charter", 1), ("write_requirements", 1),
                     ("write_requirements", 2), ("write_design", 1), ("write_acceptance", 1),
                     ("write_readiness", 1)]
    # The refused document came back with its specific reason, as the next attempt's feedback.
    refused = driver.seen[2]["feedback"]["failed_criteria"][0]["evidence"]
    assert ('requirements[1] (FR-2) needs a non-empty "fit_criterion"') in refused
    # A person approved each document, one gate each, through the approval queue.
    _code, queue = cli.json("approvals", "list", "--all")
    gates = [a for a in queue["approvals"] if a["kind"] == "gate"]
    assert [a["status"] for a in gates] == ["accepted"] * 5

    # The report counts each document's turns and the envelopes refused (none).
    _code, report = cli.json("spec", "report")
    assert [(d["document"], d["steps"]) for d in report["documents"]] == [
        ("charter", 1), ("requirements", 2), ("design", 1), ("acceptance", 1),
        ("readiness", 1)]
    assert (report["totals"]["steps"], report["totals"]["protocol_errors"]) == (6, 0)
    assert report["totals"]["tokens"] is None  # unreported, never zero
    # Every `rein spec` the agent ran is on the record of calls, as `rein dev`'s are; the
    # report is not (a person's read).
    calls = [json.loads(line) for line in
             (repo / ".rein" / "calls.jsonl").read_text().splitlines()]
    flows = [c for c in calls if c["command"].startswith("spec")]
    assert flows and all(c["command"] == "spec" for c in flows), flows
    assert flows[-1]["status"] == "done" and flows[-1]["exit"] == 0, flows[-1]

    plan = json.loads((repo / PLAN_PATH).read_text())
    assert [(f["id"], f["depends_on"], f["serves"]) for f in plan["features"]] == [
        ("c_to_f", [], ["FR-1"]), ("table", ["c_to_f", "f_to_c"], ["FR-3"]),
        ("f_to_c", [], ["FR-2"])]
    context = plan["features"][0]["context"]
    assert context == {
        "requirements": [("FR-1: tempconv.c_to_f(c) returns the temperature in Fahrenheit "
                         "(met when: c_to_f(100) == 212)")],
        "decisions": [("D-1: floats in, floats out (because: no rounding surprises for "
                      "callers)")],
        "constraints": ["C-1: Python 3.11 standard library only"],
        "files": ["tempconv/__init__.py", "tests/test_c_to_f.py"],
        "acceptance": ["AC-1: c_to_f(100) == 212"]}

    # `rein dev` imports the published plan: no planning turn, a person approves the graph.
    driver.seen.clear()
    code, where = drive(driver, person, "dev")
    assert (code, where["reason"]) == (0, "done"), where
    assert [i["node"] for i in driver.seen] == ["feature_c_to_f", "feature_f_to_c",
                                               "feature_table"]
    # Each feature was told the requirement it serves, and its report links back to it.
    assert "FR-1: tempconv.c_to_f(c)" in driver.seen[0]["brief"]
    assert [(f["id"], f["serves"]) for f in where["features"]] == [
        ("c_to_f", ["FR-1"]), ("f_to_c", ["FR-2"]), ("table", ["FR-3"])]
    _code, report = cli.json("dev", "report")
    assert {f["id"]: f["serves"] for f in report["features"]} == {
        "c_to_f": ["FR-1"], "f_to_c": ["FR-2"], "table": ["FR-3"]}

    assert git(repo, "status", "--porcelain") == ""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=clone, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout + done.stderr
