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


def test_a_flow_that_takes_up_a_recorded_answer_says_so(repo: Path, cli: Cli) -> None:
    # A person's answer recorded without continuing the run (`--no-continue`, or an answer
    # to a run approved in the agent's sandbox, which is left to the sandbox): `rein spec`
    # takes it up itself and says what it did, not that a rein process stopped.
    driver = SpecDriver(repo, cli)
    _code, where = driver.flow("spec")
    pending = where["instruction"]
    while pending["status"] == "instruction":
        _code, pending = driver.submit(driver.work(pending))
    _code, queue = cli.json("approvals", "list", "--run", where["run_id"])
    [gate] = [a for a in queue["approvals"] if a["status"] == "pending"]
    code, _ = cli("approvals", "accept", gate["approval_id"], "--no-continue")
    assert code == 0
    _code, where = driver.flow("spec")
    said = [n for n in where["notices"] if n.startswith("resumed run ")]
    note = (f"resumed run {where['run_id']}, which had an answer recorded that it had not "
            "taken up")
    assert said == [note], where["notices"]
    assert where["instruction"]["status"] == "instruction"  # the next document's turn
