"""The results: rates and intervals, what is left out of a rate and why, failures grouped
by criterion, hook flags, and the text and HTML reports."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any

from rein.eval.configs import Configuration, builtin
from rein.eval.render import render
from rein.eval.report_html import html_report
from rein.eval.results import build, discordant_needed, hook_flags
from rein.eval.scenarios import Scenario
from rein.eval.trial import Trial


def config(name: str, hooks: dict[str, Any] | None = None) -> Configuration:
    definition = {"instructions": None, "profile": None,
                  "rein": {"hooks": hooks} if hooks else {}}
    return Configuration(name=name, description="", source="eval.toml",
                         definition=definition, digest=f"sha256:{name}", suite=None)


def trial(scenario: str, configuration: str, status: str, index: int = 1,
          **extra: Any) -> Trial:
    return Trial(trial=f"{scenario}__{configuration}__{index}", scenario=scenario,
                 configuration=configuration, index=index, status=status,  # type: ignore[arg-type]
                 **extra)


def scenarios(*names: str) -> list[Scenario]:
    return [Scenario(name=n, kind="graph", path=Path("/s") / n, digest="sha256:x")
            for n in names]


PLAN = {"evaluation": "eval-x", "created_at": "now", "options": {"trials": 2}}


def test_rates_leave_out_what_could_not_be_graded() -> None:
    trials = [
        trial("s1", "h", "solved", input_tokens=10, output_tokens=5, cost_usd=0.5),
        trial("s1", "h", "failed", 2, input_tokens=10, output_tokens=5, cost_usd=None,
              failures=[{"criterion": "tests", "node": "n", "evidence": "E assert 1 == 2"}]),
        trial("s2", "h", "error", reason="rein failed"),
        trial("s2", "h", "unsupported", 2, reason="no runtime"),
        trial("s1", "oracle", "no_solution"), trial("s2", "oracle", "solved"),
    ]
    result = build(PLAN, trials, scenarios("s1", "s2"), [config("h"), builtin("oracle")],
                   alpha=0.05)
    h, oracle = result["configurations"]
    assert (h["solved"], h["trials"], h["errors"]) == (1, 3, 1)
    assert h["solve_rate"] == 1 / 3 and h["ci_low"] < 1 / 3 < h["ci_high"]
    assert h["not_graded"] == {"unsupported": ["s2__h__2"]}
    assert h["cost_usd"] == 0.5 and h["cost_complete"] is False and h["tokens"] == 30
    assert [(f["criterion"], f["trials"], f["evidence"]) for f in h["failures"]] == [
        ("error", 1, ["rein failed"]), ("tests", 1, ["E assert 1 == 2"])]
    assert result["validation"]["oracle"] == {"ok": True, "not_solved": [],
                                              "no_solution": ["s1"], "unsupported": []}
    assert (oracle["solved"], oracle["trials"]) == (1, 1)


def test_a_suite_neither_built_in_configuration_ran_on_is_not_called_valid() -> None:
    trials = [trial("s1", "h", "solved"), trial("s2", "h", "failed")]
    result = build(PLAN, trials, scenarios("s1", "s2"), [config("h")], alpha=0.05)
    assert result["validation"] == {"ok": None}  # not validated: neither a pass nor a fail
    assert "validation:" not in render(result)
    checked = build(PLAN, [*trials, trial("s1", "nop", "failed"), trial("s2", "nop", "failed")],
                    scenarios("s1", "s2"), [config("h"), builtin("nop")], alpha=0.05)
    assert checked["validation"] == {"nop": {"ok": True, "solved": []}, "ok": True}


def test_a_hook_on_a_busy_tool_is_flagged_and_one_on_a_rare_tool_is_not() -> None:
    busy = config("busy", {"guard": {"command": ["true"], "events": ["PreToolUse"],
                                     "matcher": "shell|bash"}})
    rare = config("rare", {"fetch": {"command": ["true"], "events": ["PreToolUse"],
                                     "matcher": "http_fetch"}})
    start = config("start", {"hello": {"command": ["true"], "events": ["SessionStart"]}})
    trials = [trial("s", "x", "solved", tool_calls={"shell": 6, "file_read": 3,
                                                    "http_fetch": 1})]
    flags = hook_flags([busy, rare, start], trials, share=0.2)
    assert [(f["configuration"], f["hook"], f["tools"]) for f in flags] == [
        ("busy", "guard", {"shell": 0.6})]
    # the file_write spelling of a built-in tool is caught by its other name too
    alias = config("alias", {"w": {"command": ["true"], "events": ["PreToolUse"],
                                   "matcher": "write"}})
    writes = [trial("s", "x", "solved", tool_calls={"file_write": 5, "file_read": 5})]
    assert [f["tools"] for f in hook_flags([alias], writes, share=0.2)] == [
        {"file_write": 0.5}]


def _result() -> dict[str, Any]:
    trials = [trial("s<1>", "a", "solved"), trial("s<1>", "b&c", "failed",
                                                  failures=[{"criterion": "x<y>",
                                                             "evidence": "<script>"}])]
    return build(PLAN, trials, scenarios("s<1>"), [config("a"), config("b&c")], alpha=0.05)


def test_the_html_report_is_self_contained_and_escapes_everything() -> None:
    page = html_report(_result())
    assert page.startswith("<!doctype html>") and "<svg" in page
    assert "<script" not in page and not re.search(r"(src|href)=", page)
    assert "s&lt;1&gt;" in page and "b&amp;c" in page and "&lt;script&gt;" in page
    assert page.count("<rect") == 2  # one bar per configuration


def test_the_text_report_names_the_comparison() -> None:
    text = render(_result())
    assert "b&c vs a: no significant difference (p = 1" in text
    assert "broken s<1>" in text


def test_a_cost_or_tokens_some_trials_did_not_report_are_not_shown_as_the_whole() -> None:
    """An errored trial spent nothing (0) beside trials whose provider reports no price:
    the sum is what was reported, marked as such, never a plain $0.0000."""
    trials = [trial("s1", "h", "error", reason="the graph cannot start", cost_usd=0.0,
                    input_tokens=0, output_tokens=0),
              trial("s2", "h", "solved", cost_usd=None, input_tokens=100, output_tokens=10),
              trial("s1", "g", "solved", cost_usd=0.25, input_tokens=None, output_tokens=None),
              trial("s2", "g", "solved", cost_usd=0.5, input_tokens=None, output_tokens=None)]
    result = build(PLAN, trials, scenarios("s1", "s2"), [config("h"), config("g")],
                   alpha=0.05)
    text = render(result)
    h = next(line for line in text.splitlines() if line.startswith("h "))
    g = next(line for line in text.splitlines() if line.startswith("g "))
    assert h.split()[5:7] == ["110", "0.0000+"]
    assert g.split()[5:7] == ["-", "0.7500"]
    assert "  (+: a sum over the trials that reported it; others did not)" in text
    assert "<td class=num>0.0000+</td>" in html_report(result)


def test_no_significant_difference_says_when_it_could_not_have_been_one() -> None:
    """Five scenarios of six broken, p = 2/32: the test could not reach 0.05 with five; the
    report says so rather than leave "no significant difference" to read as "no
    difference"."""
    names = [f"s{i}" for i in range(6)]
    trials = [trial(s, "a", "solved") for s in names] + \
        [trial(s, "b", "failed" if s != "s5" else "solved") for s in names]
    result = build({**PLAN, "options": {"trials": 1}}, trials, scenarios(*names),
                   [config("a"), config("b")], alpha=0.05)
    [comp] = result["comparisons"]
    assert (comp["p_value"], comp["discordant"], comp["discordant_needed"]) == (0.0625, 5, 6)
    assert ("b vs a: no significant difference (p = 0.0625, mean difference -0.83, 5 "
            "discordant scenario(s)); 5 discordant scenario(s) can never reach p < 0.05: it "
            "takes 6\n") in render(result)
    # Six that differ can: said only when the test could not.
    trials[-1] = trial("s5", "b", "failed")
    assert "can never reach" not in render(build(
        {**PLAN, "options": {"trials": 1}}, trials, scenarios(*names),
        [config("a"), config("b")], alpha=0.05))


def test_pass_at_k_beside_the_solve_rate() -> None:
    """s1 solved 1 of 3, s2 3 of 3, s3 0 of 2 (its third trial unsupported, not graded):
    pass@k averages each scenario's estimate over those with at least k graded trials."""
    trials = [trial("s1", "h", "solved", 1), trial("s1", "h", "failed", 2),
              trial("s1", "h", "failed", 3),
              *(trial("s2", "h", "solved", i) for i in (1, 2, 3)),
              trial("s3", "h", "failed", 1), trial("s3", "h", "failed", 2),
              trial("s3", "h", "unsupported", 3)]
    [h] = build({**PLAN, "options": {"trials": 3}}, trials, scenarios("s1", "s2", "s3"),
                [config("h")], alpha=0.05)["configurations"]
    assert h["pass_k_scenarios"] == {"1": 3, "2": 3, "3": 2}
    third = Fraction(1, 3)
    assert h["pass_at_k"] == {"1": float((third + 1 + 0) / 3),
                              "2": float((2 * third + 1 + 0) / 3), "3": (1 + 1) / 2}
    assert h["pass_hat_k"] == {"1": float((third + 1 + 0) / 3), "2": float(Fraction(1, 3)),
                               "3": (0 + 1) / 2}
    assert h["solve_rate"] == 4 / 8
    assert "pass@k 1:44% 2:56% 3:100%   pass^k 1:44% 2:33% 3:50%" in render(
        build({**PLAN, "options": {"trials": 3}}, trials, scenarios("s1", "s2", "s3"),
              [config("h")], alpha=0.05))


def test_the_discordant_scenarios_needed_are_the_fewest_whose_best_p_is_below_alpha() -> None:
    for alpha in (0.5, 0.25, 0.1, 0.05, 0.01, 0.001):
        n = discordant_needed(alpha)
        assert 2.0 / 2**n < alpha <= 2.0 / 2 ** (n - 1), alpha
    assert discordant_needed(0.0) > 1000  # a result file's alpha of 0: bounded, no hang
