"""`rein spec report` against `rein runs report` on the same runs: a driver that reports its
usage on some turns only, slips on some envelopes, and names a model rein has no price
for. Driven through the real command line by the scripted agent of spec_driver.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devflow_support import Cli
from spec_driver import SpecDriver, drive

PRICED = {"input_tokens": 12000, "output_tokens": 4000, "cached_input_tokens": 0, "model": "gpt-5-codex"}
UNPRICED = {"input_tokens": 9000, "output_tokens": 1000, "cached_input_tokens": 0, "model": "gpt-5.1-codex"}


class SlippingDriver(SpecDriver):
    """Sends a malformed envelope before its first document, reports usage on the charter
    (a priced model) and the design (a model rein has no price for), none on the rest."""

    usage = {"write_charter": PRICED, "write_design": UNPRICED}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slipped = 0

    def submit(self, envelope: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.slipped < 2:  # two malformed envelopes: the agent's protocol errors
            self.slipped += 1
            (self.root / ".rein" / "inbox.json").write_text("{not json")
            code, out = self.rein("submit", "--json")
            assert json.loads(out)["status"] == "refused", out
        used = self.usage.get(envelope["node"])
        return super().submit({**envelope, "usage": used} if used else envelope)


def report(cli: Cli, person: Callable[[str], str], repo: Path
           ) -> tuple[dict[str, Any], dict[str, Any], str]:
    driver = SlippingDriver(repo, cli)
    code, where = drive(driver, person)
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
    assert "known part: 26,000 tokens over 2 of 5 attempts" in text


def test_dump(repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    spec, runs, text = report(cli, person, repo)
    Path("/tmp/reports-scratch/spec.json").write_text(json.dumps(spec, indent=1))
    Path("/tmp/reports-scratch/runs.json").write_text(json.dumps(runs, indent=1))
    Path("/tmp/reports-scratch/spec.txt").write_text(text)
    _c, t = cli("runs", "report", *spec["runs"])
    Path("/tmp/reports-scratch/runs.txt").write_text(t)
    Path("/tmp/reports-scratch/calls.jsonl").write_text((repo / ".rein/calls.jsonl").read_text())
