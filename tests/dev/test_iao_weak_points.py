"""iao.md §6, weak points 1–9: each one is impossible in `rein dev`, shown on the real flow.

(2 is also pinned reason by reason in test_stops.py, 3 in test_kill_resume.py, 4 and 5 in
test_plan_check.py and test_control_plane.py; the tests here show each point once.)
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from devflow_support import BRIEF, Cli, approve, drive
from scripted import C_TO_F, TESTS, ScriptedDriver, git

from rein.dev.commands import relevant_lines
from rein.dev.stops import EXIT


def to_feature(driver: ScriptedDriver, cli: Cli, node: str) -> dict[str, Any]:
    """Drive the flow until the instruction for ``node`` is pending; that instruction."""
    driver.bad_plan_first = False
    _code, where = driver.dev()
    pending = where["instruction"]
    for _ in range(20):
        if pending.get("status") == "instruction" and pending["node"] == node:
            return pending
        if pending.get("status") == "instruction":
            _code, pending = driver.submit(driver.work(pending))
        elif pending.get("for") == "approval":
            approve(cli)
            _code, where = driver.dev()
            pending = where["instruction"]
    raise AssertionError(pending)


def test_1_the_state_machine_is_enforced(repo: Path, driver: ScriptedDriver,
                                         cli: Cli) -> None:
    """Stale PASS, out-of-turn commands, a mid-run re-plan, a lost instruction: none."""
    driver.wrong_first = False
    pending = to_feature(driver, cli, "feature_f_to_c")
    head = git(repo, "rev-parse", "HEAD")
    answered = next(i for i in driver.seen if i["node"] == "feature_c_to_f")
    # Broken code, then the answered c_to_f envelope again (IAO's `handoff` of #2 reused
    # #1's PASS): refused, the pending instruction is printed again, nothing committed.
    driver.write("tempconv/__init__.py", "def c_to_f(c):\n    return 0\n")
    code, out = driver.submit({"protocol": "rein.driver/1", "token": answered["token"],
                               "node": "feature_c_to_f", "attempt": 1, "status": "done",
                               "outputs": {"summary": "again"}})
    assert (code, out["status"], out["error"]["code"]) == (4, "refused", "DRIVER_ANSWERED")
    assert out["pending"]["token"] == pending["token"]  # the instruction is not lost
    assert git(repo, "rev-parse", "HEAD") == head
    # An envelope that names another node for the pending token is refused, with the
    # pending instruction printed again.
    code, out = driver.submit({**driver.work(pending), "node": "feature_table"})
    assert (code, out["status"]) == (4, "refused")
    assert out["pending"]["token"] == pending["token"]
    # f_to_c's own turn with a broken f_to_c: rein runs its verify, which fails: no commit.
    driver.write("tempconv/__init__.py", C_TO_F + "\n\ndef f_to_c(f):\n    return f\n")
    driver.write("tests/test_f_to_c.py", TESTS["f_to_c"])
    code, out = driver.submit({"protocol": "rein.driver/1", "token": pending["token"],
                               "node": pending["node"], "attempt": 1, "status": "done",
                               "outputs": {"summary": "f_to_c"}})
    assert out["node"] == "feature_f_to_c" and out["attempt"] == 2
    assert git(repo, "rev-parse", "HEAD") == head
    assert "f_to_c" not in (repo / "progress.txt").read_text()
    # `rein dev` mid-run continues; it never re-plans (only `start --new` does).
    _code, where = driver.dev()
    assert where["stage"] == "features" and where["instruction"]["token"] == out["token"]


def test_2_each_stop_has_its_own_reason_and_a_non_zero_exit() -> None:
    assert EXIT["done"] == 0
    assert {r: c for r, c in EXIT.items() if r != "done"} == {
        "waiting": 3, "failed": 1, "blocked": 1, "timeout": 1, "budget": 4, "cancelled": 1}


def test_3_a_resubmitted_envelope_is_applied_once(repo: Path, driver: ScriptedDriver,
                                                  cli: Cli) -> None:
    driver.wrong_first = False
    pending = to_feature(driver, cli, "feature_c_to_f")
    envelope = driver.work(pending)
    driver.submit(envelope)
    _code, out = driver.submit(envelope)
    assert out["node"] == "feature_f_to_c"
    assert len(git(repo, "log", "--oneline").splitlines()) == 1


def test_4_a_failing_verify_is_told_by_its_relevant_lines() -> None:
    pytest_output = ("F                                                      [100%]\n"
                     "=================================== FAILURES ===\n"
                     "    def test_boiling():\n"
                     ">       assert c_to_f(100) == 212\n"
                     "E       assert 180.0 == 212\n"
                     "FAILED tests/test_c_to_f.py::test_boiling - assert 180.0 == 212\n"
                     "1 failed in 0.01s\n")
    told = relevant_lines(pytest_output)
    assert "F      " not in told.splitlines()[0]
    assert "FAILED tests/test_c_to_f.py::test_boiling - assert 180.0 == 212" in told
    assert told.splitlines()[-1].strip() == "1 failed in 0.01s"


def test_5_placeholders_and_defaults_are_not_accepted_blindly(
        repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    driver = ScriptedDriver(repo, cli, bad_plan_first=False,
                            plan={"verify": "$VERIFY_CMD", "features": [
                                {"id": "a", "title": "A"}]})
    _code, where = driver.dev()
    _code, out = driver.submit(driver.work(where["instruction"]))
    evidence = out["feedback"]["failed_criteria"][0]["evidence"]
    assert "placeholder that was never filled in (such as $VERIFY_CMD)" in evidence
    # No plan verify and no override: refused, never a default such as `dotnet test`.
    driver.plan = {"features": [{"id": "a", "title": "A"}]}
    _code, out = driver.submit(driver.work(out))
    assert "no verify command for feature(s) a" in \
        out["feedback"]["failed_criteria"][0]["evidence"]


def test_6_an_empty_change_is_not_done(repo: Path, driver: ScriptedDriver, cli: Cli) -> None:
    driver.wrong_first = False
    pending = to_feature(driver, cli, "feature_f_to_c")
    # f_to_c's verify runs the whole suite, which passes on the old code: the change is
    # empty, so rein does not even run it.
    _code, out = driver.submit({"protocol": "rein.driver/1", "token": pending["token"],
                               "node": pending["node"], "attempt": 1, "status": "done",
                               "outputs": {"summary": "nothing"}})
    assert out["attempt"] == 2, out
    assert "the change is empty" in out["feedback"]["failed_criteria"][0]["evidence"]
    assert len(git(repo, "log", "--oneline").splitlines()) == 1


def test_6_a_change_to_the_targets_progress_file_alone_is_empty(
        repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    # rein appends to <target>/progress.txt itself, as to the root's: not the work.
    monkeypatch.setenv("REIN_DEV_TARGET", "app")
    (repo / "app").mkdir()
    driver = ScriptedDriver(repo, cli, target="app", wrong_first=False)
    pending = to_feature(driver, cli, "feature_f_to_c")
    assert "app/progress.txt" in git(repo, "ls-files").split()
    driver.write("app/progress.txt", "Feature f_to_c: done, trust me\n", append=True)
    _code, out = driver.submit({"protocol": "rein.driver/1", "token": pending["token"],
                               "node": pending["node"], "attempt": 1, "status": "done",
                               "outputs": {"summary": "nothing"}})
    assert out["attempt"] == 2, out
    evidence = out["feedback"]["failed_criteria"][0]["evidence"]
    assert "the change is empty" in evidence and "app/progress.txt" in evidence


def test_7_a_new_brief_is_said_and_start_new_plans_again(repo: Path, driver: ScriptedDriver,
                                                         cli: Cli) -> None:
    driver.wrong_first = False
    to_feature(driver, cli, "feature_f_to_c")
    (repo / "specs" / "more.md").write_text("Also Kelvin.\n")
    code, where = driver.dev()
    assert code == 0 and where["stage"] == "features"
    assert any("the briefs in specs/ changed since this plan was made" in n and
               "rein dev start --new" in n for n in where["notices"])
    code, where = driver.dev("start", "--new")
    assert where["stage"] == "planning" and where["instruction"]["node"] == "plan"
    assert "Also Kelvin." in where["instruction"]["brief"]
    assert any("cancelled the earlier flow's run" in n for n in where["notices"])
    assert BRIEF.strip().splitlines()[0] in where["instruction"]["brief"]


def test_8_each_step_is_attributed_to_its_own_feature(repo: Path, driver: ScriptedDriver,
                                                      cli: Cli) -> None:
    code, _where = drive(driver, cli)
    assert code == 0
    _c, report = cli.json("dev", "report")
    assert {f["id"]: f["attempts"] for f in report["features"]} == {
        "c_to_f": 2, "f_to_c": 1, "table": 1}
    # Steps: the calls about a feature's turns, a submit counted for the turn it answered
    # (not the next instruction it printed): c_to_f's are the `rein dev` that printed its
    # first instruction and the submits of its two attempts.
    steps = {f["id"]: f["steps"] for f in report["features"]}
    assert steps == {"c_to_f": 3, "f_to_c": 1, "table": 1}
    planning = next(s for s in report["stages"] if s["name"] == "planning")
    assert planning["steps"] >= 2  # the refused plan is an attempt of its own
    assert report["totals"]["usage"] is None  # not reported: never shown as zero
    # The refused plan is recorded as a failed attempt with its reason, not an instruction.
    _c, record = cli("runs", "record", report["stages"][0]["name"] and
                     json.loads((repo / ".rein/dev/flow.json").read_text())["planning_run"])
    assert "criteria_failed" in record and "cycle through c_to_f, table" in record


def test_9_a_planted_hook_never_runs(repo: Path, driver: ScriptedDriver, cli: Cli,
                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = tmp_path / "hook-ran"
    script = f"#!/bin/sh\necho $0 >> {ran}\n"
    planted = [repo / ".git" / "hooks" / "pre-commit", tmp_path / "shared" / "pre-commit",
               tmp_path / "tmp" / "iao-no-hooks" / "pre-commit",
               tmp_path / "tmp" / "iao-no-hooks" / "commit-msg"]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    git(repo, "config", "core.hooksPath", str(tmp_path / "shared"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    code, _where = drive(driver, cli)
    assert code == 0
    assert len(git(repo, "log", "--oneline").splitlines()) == 3
    assert not ran.exists()
    assert os.listdir(tmp_path / "tmp") == ["iao-no-hooks"]  # rein's own dirs are removed
