"""The shipped suite (examples/eval), quickly: the built-in configurations validate it, and
two scripted configurations with a known difference are told apart with the right
significance while two without one are not. The JSON printed is the interface suites and CI
rely on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_approved, run_eval

from rein.eval.scenarios import find_scenarios

SHELL_USERS = ["count-lines", "harbor-checksum", "harbor-hello", "json-config",
               "release-gate", "sort-names"]


def test_the_suite_holds_every_kind_of_scenario() -> None:
    scenarios = find_scenarios([SUITE])
    kinds = {s.kind for s in scenarios}
    assert kinds == {"graph", "brief", "harbor"} and 5 <= len(scenarios) <= 10
    assert all(s.solution is not None for s in scenarios)
    assert any(s.gates for s in scenarios if s.kind == "graph")
    assert any(s.solution and s.solution.suffix == ".patch" for s in scenarios)


def test_the_suites_graphs_validate_strictly_for_rein_and_the_reference_validator() -> None:
    import ags  # the agentic-graph-spec package: the reference validator

    from rein.formats.ags import validate_path

    graphs = [s.graph for s in find_scenarios([SUITE]) if s.graph is not None]
    assert len(graphs) == 5
    for graph in graphs:
        assert [f.render() for f in validate_path(graph).findings] == [], graph
        assert [(f.code, f.message) for f in ags.validate_path(graph).findings] == [], graph


def test_oracle_solves_everything_and_nop_nothing(ws: Path, capsys: Any) -> None:
    code, result = run_eval(capsys, str(SUITE), "--config", "oracle", "--config", "nop")
    assert code == 0
    rates = {c["name"]: c for c in result["configurations"]}
    assert rates["oracle"]["solve_rate"] == 1.0 and rates["nop"]["solve_rate"] == 0.0
    assert rates["oracle"]["trials"] == rates["nop"]["trials"] == 8
    assert rates["oracle"]["tokens"] == rates["nop"]["tokens"] == 0  # no model is called
    assert result["validation"] == {
        "oracle": {"ok": True, "not_solved": [], "no_solution": [], "unsupported": []},
        "nop": {"ok": True, "solved": []}, "ok": True}
    for config in result["configurations"]:  # the keys suites and CI read
        assert {"name", "solve_rate", "ci_low", "ci_high", "trials", "cost_usd",
                "tokens"} <= set(config)
        assert 0 <= config["ci_low"] <= config["solve_rate"] <= config["ci_high"] <= 1
    assert len(result["scenarios"]) == 8


def test_a_known_difference_is_significant_and_no_difference_is_not(
        ws: Path, capsys: Any) -> None:
    code, result = run_approved(capsys, str(SUITE), "--config", "scripted",
                                "--config", "scripted-no-shell", "--config",
                                "scripted-reworded", "--lanes", "2")
    assert code == 0
    rates = {c["name"]: (c["solved"], c["trials"]) for c in result["configurations"]}
    assert rates == {"scripted": (8, 8), "scripted-no-shell": (2, 8),
                     "scripted-reworded": (8, 8)}
    scripted = result["configurations"][0]
    # The scripted provider has no prices: its cost is unknown, never zero.
    assert scripted["cost_usd"] is None and scripted["tokens"] == 5621
    assert scripted["tokens_complete"] and scripted["turns"] == 17
    blocked, reworded = result["comparisons"]
    assert (blocked["baseline"], blocked["candidate"]) == ("scripted", "scripted-no-shell")
    # Six scenarios broken, none fixed: McNemar's exact test gives 2 × (1/2)^6.
    assert blocked["p_value"] == 2 / 64 and blocked["significant"]
    assert blocked["verdict"] == "worse" and blocked["broken"] == SHELL_USERS
    assert reworded["p_value"] == 1.0 and not reworded["significant"]
    assert reworded["verdict"] == "no significant difference"
    assert {d["key"] for d in reworded["diff"]} == {"instructions", "system",
                                                    "tools.shell.description"}
    # Its words reached every model call; the shell's description every call offering it.
    words = next(c for c in result["configurations"] if c["name"] == "scripted-reworded")
    assert words["overlays"]["calls"] == words["overlays"]["system"] == scripted["turns"]
    assert 0 < words["overlays"]["tools"]["shell"] < scripted["turns"]
    assert words["overlays"]["never_offered"] == []
    # What each change touched, fixed and broke; the broad hook on the busiest tool flagged.
    changes = result["risk"]["changes"]
    assert changes[0]["areas"] == ["hooks"] and changes[0]["broken"] == SHELL_USERS
    assert changes[1]["areas"] == ["prompt", "tools"] and changes[1]["broken"] == []
    [flag] = result["risk"]["hooks"]
    assert (flag["configuration"], flag["hook"], flag["tools"]) == (
        "scripted-no-shell", "no-shell", {"shell": 0.667})  # docs/eval.md quotes the share
    # The failures grouped by criterion, with the evidence.
    failures = {c["name"]: c["failures"] for c in result["configurations"]}
    criteria = {f["criterion"] for f in failures["scripted-no-shell"]}
    assert {"reward", "counted", "sorted", "bumped", "debug_off"} <= criteria
    reward = next(f for f in failures["scripted-no-shell"] if f["criterion"] == "reward")
    assert reward["scenarios"] == ["harbor-checksum", "harbor-hello"]


@pytest.mark.parametrize("trials", [2])
def test_several_trials_add_up(ws: Path, capsys: Any, trials: int) -> None:
    code, result = run_eval(capsys, str(SUITE / "fix-greeting"), str(SUITE / "count-lines"),
                            "--config", "scripted", "--trials", str(trials))
    assert code == 0
    [config] = result["configurations"]
    assert (config["solved"], config["trials"]) == (2 * trials, 2 * trials)
    assert config["pass_at_k"] == config["pass_hat_k"] == {"1": 1.0, "2": 1.0}
    assert config["pass_k_scenarios"] == {"1": 2, "2": 2}
    assert config["tokens"] == trials * (220 + 30 + 260 + 15 + 240 + 25 + 290 + 12)
    assert config["turns"] == 4 * trials
    assert [t["trial"] for t in result["trials"]] == [
        f"{s}__scripted__{i}" for i in range(1, trials + 1)
        for s in ("fix-greeting", "count-lines")]
