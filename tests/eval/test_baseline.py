"""`--baseline RESULT` gates a change to a harness: exit non-zero on a significant regression
or on any scenario newly broken; a change that breaks nothing passes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_approved, run_eval

from rein.eval.baseline import against_baseline

SHELL_FREE = [str(SUITE / "fix-greeting"), str(SUITE / "tempconv")]
ONE_SHELL = [*SHELL_FREE, str(SUITE / "count-lines")]


def test_a_change_that_breaks_a_scenario_fails_the_gate(ws: Path, tmp_path: Path,
                                                        capsys: Any) -> None:
    code, before = run_eval(capsys, *ONE_SHELL, "--config", "scripted")
    assert code == 0
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(before))
    code, after = run_approved(capsys, *ONE_SHELL, "--config", "scripted-no-shell",
                               "--baseline", str(baseline))
    assert code == 1
    [row] = after["baseline"]["comparisons"]
    assert (row["baseline"], row["candidate"]) == ("baseline:scripted", "scripted-no-shell")
    assert row["broken"] == ["count-lines"] and row["regression"]
    assert not row["significant"]  # one scenario is no significant difference, yet it broke
    assert after["baseline"]["passed"] is False


def test_a_change_that_breaks_nothing_passes(ws: Path, capsys: Any) -> None:
    code, before = run_eval(capsys, *ONE_SHELL, "--config", "scripted")
    code, after = run_eval(capsys, *ONE_SHELL, "--config", "scripted-reworded",
                           "--baseline", before["evaluation"])
    assert code == 0 and after["baseline"]["passed"] is True
    assert after["baseline"]["comparisons"][0]["broken"] == []


def _result(name: str, cells: dict[str, tuple[int, int]]) -> dict[str, Any]:
    return {"evaluation": "e", "configurations": [{"name": name}],
            "scenarios": [{"name": s, "results": {name: {"solved": k, "trials": n}}}
                          for s, (k, n) in cells.items()]}


def test_a_significant_regression_fails_even_with_nothing_newly_broken() -> None:
    """Eight scenarios each solved 2 times of 3 before, 0 of 3 after: no scenario was
    solved every time before, so none is 'newly broken'; the drop is significant."""
    before = _result("h", {f"s{i}": (2, 3) for i in range(8)})
    after = _result("h", {f"s{i}": (0, 3) for i in range(8)})
    gate = against_baseline(after, before, alpha=0.05)
    [row] = gate["comparisons"]
    assert row["broken"] == [] and row["verdict"] == "worse" and row["p_value"] == 2 / 256
    assert gate["passed"] is False
    better = against_baseline(before, after, alpha=0.05)
    assert better["passed"] is True and better["comparisons"][0]["verdict"] == "better"


def test_same_names_are_compared_and_otherwise_the_only_ones() -> None:
    before = {"configurations": [{"name": "a"}, {"name": "b"}], "scenarios": []}
    with pytest.raises(Exception) as caught:
        against_baseline({"configurations": [{"name": "c"}], "scenarios": []}, before,
                         alpha=0.05)
    assert getattr(caught.value, "code", None) == "EVAL011"


def test_an_unreadable_baseline_is_a_usage_error(ws: Path, capsys: Any,
                                                 tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a result"}')
    code, out = run_eval(capsys, *SHELL_FREE, "--config", "scripted", "--baseline", str(bad))
    assert code == 64 and out["error"]["code"] == "EVAL009"
    assert not (ws / ".rein" / "evals").exists()  # refused before anything ran


def test_a_baseline_that_cannot_be_compared_is_refused_before_any_trial_runs(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    """It was refused once every trial had run, leaving the evaluation unfinished."""
    before = tmp_path / "before.json"
    before.write_text(json.dumps(_result("scripted", {"fix-greeting": (1, 1)})))
    code, out = run_eval(capsys, *SHELL_FREE, "--config", "scripted-reworded",
                         "--config", "scripted-no-shell", "--baseline", str(before))
    assert (code, out["error"]["code"]) == (64, "EVAL011")
    assert out["error"]["message"].startswith("the baseline has no configuration to compare")
    code, out = run_eval(capsys, str(SUITE / "count-lines"), "--config", "scripted",
                         "--baseline", str(before))
    assert (code, out["error"]["code"]) == (64, "EVAL011")
    assert out["error"]["message"] == ("the baseline ran scripted on none of this "
                                       "evaluation's scenarios: baseline ['fix-greeting'], "
                                       "now ['count-lines']")
    assert not (ws / ".rein" / "evals").exists()


def test_the_gate_says_what_it_could_not_compare() -> None:
    before = _result("h", {"a": (1, 1), "b": (1, 1), "gone": (1, 1)})
    before["scenarios"][1]["digest"] = "sha256:old"
    after = _result("h", {"a": (1, 1), "b": (1, 1), "new": (0, 1)})
    after["scenarios"][1]["digest"] = "sha256:new"
    [row] = against_baseline(after, before, alpha=0.05)["comparisons"]
    assert row["not_compared"] == {"not_run_now": ["gone"], "not_in_baseline": ["new"],
                                   "changed": ["b"]}
    from rein.eval.render import render

    text = render({"evaluation": "e", "scenarios": [], "trials_per_scenario": 1,
                   "configurations": [], "comparisons": [],
                   "baseline": against_baseline(after, before, alpha=0.05)})
    assert "    not run now, not compared: gone\n" in text
    assert "    not in the baseline, not compared: new\n" in text
    assert "    changed since the baseline ran: b\n" in text
