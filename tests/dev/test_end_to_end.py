"""`rein dev` from a brief to a working package, driven by a scripted agent that writes code.

One session: a bad plan (refused with its reason), the plan graph approved by a person,
three features built one at a time, a verify that fails and is repaired, a context reset,
rein's own commits, and `done`; then the package passes its own tests in a fresh clone.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from devflow_support import BRIEF, Cli, drive
from scripted import ScriptedDriver, git


def test_a_brief_becomes_a_verified_committed_package(repo: Path, driver: ScriptedDriver,
                                                       cli: Cli, tmp_path: Path) -> None:
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    assert [f["status"] for f in where["features"]] == ["succeeded"] * 3

    turns = [(i["node"], i["attempt"]) for i in driver.seen]
    assert turns == [("plan", 1), ("plan", 2), ("feature_c_to_f", 1), ("feature_c_to_f", 2),
                     ("feature_f_to_c", 1), ("feature_table", 1)]
    # The bad plan was refused with its specific reason, as the next attempt's feedback.
    refused = driver.seen[1]["feedback"]["failed_criteria"][0]["evidence"]
    assert "the dependencies form a cycle through c_to_f, table" in refused
    # The wrong c_to_f failed rein's own verify; the repair was told the failing assertion,
    # not pytest's first line of output.
    feedback = driver.seen[3]["feedback"]["failed_criteria"][0]["evidence"]
    assert "verify failed" in feedback and "assert 180.0 == 212" in feedback
    # Each feature was told only its own context, never the brief again.
    for instruction in driver.seen[2:]:
        assert "converts temperatures" not in str(instruction)
    assert "c_to_f(100) == 212" in driver.seen[2]["brief"]

    log = git(repo, "log", "--format=%s").splitlines()
    assert log == ["feat(dev): feature table - A conversion table",
                   "feat(dev): feature f_to_c - Fahrenheit to Celsius",
                   "feat(dev): feature c_to_f - Celsius to Fahrenheit"]
    assert git(repo, "status", "--porcelain") == ""
    progress = (repo / "progress.txt").read_text().splitlines()
    assert [line.split(" - ")[0] for line in progress] == [
        "Feature c_to_f", "Feature f_to_c", "Feature table"]
    # The first commit of a repository that had none also holds the brief and the plan.
    first = git(repo, "show", "--name-only", "--format=", "HEAD~2").split()
    assert {"specs/brief.md", "specs/plan.agraph.yaml", "tempconv/__init__.py"} <= set(first)
    assert (repo / "specs" / "brief.md").read_text() == BRIEF

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=clone, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_a_context_reset_is_asked_for_a_new_feature_never_for_a_repair(
        driver: ScriptedDriver, cli: Cli) -> None:
    driver.context_usage = {"used_tokens": 150_000, "window_tokens": 200_000}  # 75%
    code, where = drive(driver, cli)
    assert code == 0, where
    clean = {(i["node"], i["attempt"]): i["clean_context"] for i in driver.seen}
    assert clean[("feature_c_to_f", 2)] is False  # the repair keeps its context
    assert clean[("feature_f_to_c", 1)] is True
    assert clean[("feature_table", 1)] is True
    assert "75%" in next(i for i in driver.seen if i["node"] == "feature_f_to_c")[
        "clean_context_reason"]


def test_below_the_threshold_no_reset_is_asked(driver: ScriptedDriver, cli: Cli) -> None:
    driver.context_usage = {"used_tokens": 60_000, "window_tokens": 200_000}  # 30%
    code, _where = drive(driver, cli)
    assert code == 0
    assert not any(i["clean_context"] for i in driver.seen)


def test_the_context_usage_may_come_from_the_environment(
        driver: ScriptedDriver, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REIN_CONTEXT_USAGE_JSON",
                       '{"used_tokens": 90000, "window_tokens": 100000}')
    code, _where = drive(driver, cli)
    assert code == 0
    first = next(i for i in driver.seen if i["node"] == "feature_f_to_c")
    assert first["clean_context"] is True
    assert first["clean_context_reason"].startswith("REIN_CONTEXT_USAGE_JSON reported 90%")
    repair = next(i for i in driver.seen if i["node"] == "feature_c_to_f" and i["attempt"] == 2)
    assert repair["clean_context"] is False


def test_every_n_features_asks_a_clean_session_without_any_usage_report(
        driver: ScriptedDriver, cli: Cli, repo: Path) -> None:
    (repo / "rein.toml").write_text('[dev]\ncontext_policy = "every-2"\n')
    code, where = drive(driver, cli)
    assert code == 0, where
    clean = {(i["node"], i["attempt"]): i["clean_context"] for i in driver.seen}
    # Build order c_to_f, f_to_c, table: the first and the third start clean, the repair
    # of the first keeps its context.
    assert clean[("feature_c_to_f", 1)] is True and clean[("feature_c_to_f", 2)] is False
    assert clean[("feature_f_to_c", 1)] is False
    assert clean[("feature_table", 1)] is True
    first = next(i for i in driver.seen if i["node"] == "feature_table")
    assert "context policy" in first["clean_context_reason"]


def test_never_asks_no_clean_session_even_past_the_threshold(
        driver: ScriptedDriver, cli: Cli, repo: Path) -> None:
    (repo / "rein.toml").write_text('[dev]\ncontext_policy = "never"\n')
    driver.context_usage = {"used_tokens": 190_000, "window_tokens": 200_000}  # 95%
    code, where = drive(driver, cli)
    assert code == 0, where
    features = [i for i in driver.seen if i["node"].startswith("feature_")]
    assert features and not any(i["clean_context"] for i in features)


def test_a_context_policy_outside_the_known_ones_is_refused(repo: Path, cli: Cli) -> None:
    (repo / "rein.toml").write_text('[dev]\ncontext_policy = "every-0"\n')
    code, out = cli("dev", "--json")
    assert code == 64 and "every-N" in out
