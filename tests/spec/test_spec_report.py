"""`rein spec report` against `rein runs report` on the same runs: a driver that reports its
usage on some turns only, slips on some envelopes, and names a model rein has no price
for. Driven through the real command line by the scripted agent of spec_driver.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from devflow_support import Cli
from spec_driver import SpecDriver, drive

PRICED = {"input_tokens": 12000, "output_tokens": 4000, "cached_input_tokens": 0, "model": "gpt-5-codex"}
UNPRICED = {"input_tokens": 9000, "output_tokens": 1000, "cached_input_tokens": 0, "model": "gpt-5.1-codex"}


class SlippingDriver(SpecDriver):
    """Sends a malformed envelope before its first document, reports usage on the charter
    (a priced model) and the design (a model rein has no price for), none on the rest."""

    usage: ClassVar[dict[str, dict[str, Any]]] = {"write_charter": PRICED,
                                                  "write_design": UNPRICED}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slipped = 0

    def submit(self, envelope: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        while self.slipped < 2:  # two malformed envelopes first: the agent's slips
            self.slipped += 1
            (self.root / ".rein" / "inbox.json").write_text("{not json")
            _code, out = self.rein("submit", "--json")
            assert json.loads(out)["status"] == "refused", out
        used = self.usage.get(envelope["node"])
        return super().submit({**envelope, "usage": used} if used else envelope)


def report(cli: Cli, person: Callable[[str], str], repo: Path
           ) -> tuple[dict[str, Any], dict[str, Any], str]:
    driver = SlippingDriver(repo, cli)
    asked: list[str] = []

    def impatient(run_id: str) -> str:
        """The agent submits while a person is asked (no instruction is pending) before
        the person answers, on the first approval: a refusal that answered no document."""
        if not asked:
            (repo / ".rein" / "inbox.json").write_text("{not json")
            _code, out = cli("submit", "--json")
            assert json.loads(out)["status"] == "refused", out
        asked.append(person(run_id))
        return asked[-1]

    code, where = drive(driver, impatient)
    assert (code, where["reason"]) == (0, "ready"), where
    _code, spec = cli.json("spec", "report")
    _code, runs = cli.json("runs", "report", *spec["runs"])
    _code, text = cli("spec", "report")
    return spec, runs, text


def test_a_total_over_a_part_that_is_unknown_is_unknown_and_the_known_part_is_labelled(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    spec, runs, text = report(cli, person, repo)
    rows = {d["document"]: d for d in spec["documents"]}
    assert (rows["charter"]["tokens"], rows["design"]["tokens"]) == (16000, 10000)
    assert rows["requirements"]["tokens"] is None
    totals = spec["totals"]
    assert (totals["tokens"], totals["cost_usd"]) == (None, None)
    assert totals["known"] == {"attempts": 2, "of": 5, "tokens": 26000,
                               "cost_usd": None}
    # The runs report says the same of the same turns.
    assert runs["totals"]["usage"] is None
    assert runs["totals"]["usage_known"]["total_tokens"] == 26000
    assert "known part: 26,000 tokens over 2 of 5 attempts, cost unknown" in text
    _code, shown = cli("runs", "report", *spec["runs"])
    assert "known part: 26,000 tokens, unknown, over 2 of 5 turns" in shown
    assert "unknown tokens, unknown (mixed)" in shown  # the total itself
    from rein.web.usage_html import body

    assert "Known part: 26,000 tokens, <span class='unknown'>unknown</span>, over 2 of 5" \
        in body(runs)


def test_the_spec_report_counts_every_refusal_the_runs_report_counts(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    spec, runs, text = report(cli, person, repo)
    # Two malformed envelopes while the charter's instruction was pending, one while a
    # person was asked: three refusals on the record of calls, in both reports.
    assert runs["errors"]["agent"] == {"DRIVER_ENVELOPE": 3}, runs["errors"]
    rows = {d["document"]: d["protocol_errors"] for d in spec["documents"]}
    assert rows == {"charter": 2, "requirements": 0, "design": 0, "acceptance": 0,
                    "readiness": 0}, rows
    assert spec["unattributed"]["protocol_errors"] == 1
    assert spec["totals"]["protocol_errors"] == runs["totals"]["protocol_errors"] == 3
    assert "(answered no document's instruction)" in text


def test_a_model_with_no_price_is_named_with_how_to_give_one_and_listed_per_model(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    spec, runs, text = report(cli, person, repo)
    assert spec["unpriced"] == runs["unpriced"] == ["gpt-5.1-codex"]
    assert ('no price for gpt-5.1-codex: its cost is unknown (give one in rein.toml under '
            '[usage.prices."gpt-5.1-codex"]') in text
    models = {(m["model"], m["source"]): (m["turns"], m["total_tokens"], m["cost_usd"])
              for m in spec["models"]}
    assert models == {("gpt-5-codex", "self-reported"): (1, 16000, 0.055),
                      ("gpt-5.1-codex", "self-reported"): (1, 10000, None)}
    assert runs["models"] == spec["models"]
    _code, shown = cli("runs", "report", *spec["runs"])
    assert "no price for gpt-5.1-codex" in shown and "\nmodels (attributed" in shown

