"""What a person's answer in the middle of a flow points the agent at: the flow's command."""

from __future__ import annotations

from pathlib import Path

from devflow_support import Cli
from spec_driver import SpecDriver


def test_an_answer_in_the_spec_flow_points_at_rein_spec(repo: Path, cli: Cli) -> None:
    driver = SpecDriver(repo, cli)
    _code, where = driver.flow("spec")
    pending = where["instruction"]
    while pending["status"] == "instruction":  # the charter, written and submitted
        _code, pending = driver.submit(driver.work(pending))
    assert pending.get("for") == "approval", pending
    _code, queue = cli.json("approvals", "list", "--run", where["run_id"])
    [gate] = [a for a in queue["approvals"] if a["status"] == "pending"]
    code, out = cli("approvals", "accept", gate["approval_id"])
    # The run goes on to the next document, an instruction for the agent: the flow's own
    # command says what it waits for (with its stage and documents), not `rein next`.
    assert code == 3, out  # the run waits (for its driver)
    assert "`rein spec` prints what it waits for" in out, out
    assert "`rein next` prints" not in out
