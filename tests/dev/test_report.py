"""`rein dev report` of an agent that reports its usage in its envelopes (no agent records
to read): the models it named, and the money spent on a plan `rein dev start --new`
abandoned. Through the real command line, with the scripted driver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devflow_support import Cli
from scripted import ScriptedDriver
from test_iao_weak_points import to_feature

USED = {"input_tokens": 20000, "output_tokens": 2500, "cached_input_tokens": 0,
        "model": "gpt-5-codex"}


class Reporting(ScriptedDriver):
    """Reports the same usage on every turn."""

    def work(self, instruction: dict[str, Any]) -> dict[str, Any]:
        return {**super().work(instruction), "usage": USED}


def test_self_reported_models_are_listed_and_an_abandoned_plans_cost_is_not_hidden(
        repo: Path, cli: Cli) -> None:
    driver = Reporting(repo, cli, wrong_first=False)
    to_feature(driver, cli, "feature_f_to_c")  # the plan, then c_to_f: two turns
    first = json.loads((repo / ".rein/dev/flow.json").read_text())
    _code, before = cli.json("dev", "report")
    assert [(m["model"], m["source"], m["turns"], m["total_tokens"])
            for m in before["models"]] == [("gpt-5-codex", "self-reported", 2, 45000)]
    assert before["earlier_plans"] is None
    # f_to_c's instruction is pending: its usage is unknown, and so the total.
    assert before["totals"]["usage"] is None
    known = before["totals"]["usage_known"]
    cost = round(2 * (20000 * 1.25 + 2500 * 10.0) / 1e6, 6)
    assert (known["turns"], known["of"], known["total_tokens"], known["cost_usd"]) == (
        2, 3, 45000, cost)
    _code, text = cli("dev", "report")
    assert "\nmodels (attributed" in text and "gpt-5-codex  self-reported" in text

    (repo / "specs" / "more.md").write_text("Also Kelvin.\n")
    _code, where = driver.dev("start", "--new")
    assert where["stage"] == "planning", where
    _code, after = cli.json("dev", "report")
    earlier = after["earlier_plans"]
    assert earlier["runs"] == [first["planning_run"], first["features_run"]]
    assert (earlier["turns"], earlier["usage"]) == (3, None)
    assert (earlier["usage_known"]["total_tokens"], earlier["usage_known"]["cost_usd"]) == (
        45000, cost)
    assert [t["node"] for t in after["turns"]] == ["plan"]  # the new plan's first, pending
    _code, text = cli("dev", "report")
    assert ("earlier plans (not in the figures above): 2 runs, 3 turns, unknown tokens "
            f"(known part: 45,000 tokens, ${cost:.4f}, over 2 of 3 turns) (mixed)") in text
