"""A document edited while its gate waited: the approval that showed the old content is
closed when the new content is presented (and never named again as the one to answer), and
the new content is checked by rein before a person is asked about it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devflow_support import Cli
from spec_driver import SpecDriver, drive

from rein.spec.paths import PATHS


def to_the_charter_gate(driver: SpecDriver) -> tuple[str, dict[str, Any]]:
    """The flow started and the charter written: the run and its one pending approval."""
    code, where = driver.flow("spec")
    assert code == 0 and where["instruction"]["node"] == "write_charter", where
    code, waiting = driver.submit(driver.work(where["instruction"]))
    assert code == 3 and waiting["for"] == "approval", waiting
    [pending] = waiting["approvals"]
    return str(where["run_id"]), pending


def pending_ids(cli: Cli) -> list[str]:
    _code, queue = cli.json("approvals", "list")
    return [a["approval_id"] for a in queue["approvals"] if a["status"] == "pending"]


def edit_charter(repo: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = repo / PATHS["charter"]
    charter = json.loads(path.read_text())
    change(charter)
    path.write_text(json.dumps(charter, indent=2))


def test_the_approval_a_resume_replaces_is_closed_and_never_named_again(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    driver = SpecDriver(repo, cli)
    run_id, first = to_the_charter_gate(driver)
    edit_charter(repo, lambda c: c.update(goal=c["goal"] + " Exact to the degree."))
    code, refused = cli.json("approvals", "accept", first["approval_id"])
    assert (code, refused["error"]["code"]) == (4, "APPROVAL_STALE"), refused
    assert f"rein resume {run_id}" in refused["error"]["hint"]

    code, _out = cli("resume", run_id)
    assert code == 3
    [second] = pending_ids(cli)  # the old entry is closed, not pending beside the new one
    assert second != first["approval_id"]
    _code, old = cli.json("approvals", "show", first["approval_id"])
    assert (old["status"], old["answer"]["superseded_by"]) == ("cancelled", second)
    assert person(run_id) == second

    # The next gate is named, alone: by `rein submit`, `rein next` and `rein spec`.
    code, where = driver.flow("spec")
    assert where["instruction"]["node"] == "write_requirements", where
    code, waiting = driver.submit(driver.work(where["instruction"]))
    [third] = pending_ids(cli)
    assert third not in (first["approval_id"], second)
    assert code == 3 and [a["approval_id"] for a in waiting["approvals"]] == [third]
    assert waiting["message"].startswith(f"a person must answer gate {third} (Approve the "
                                         "requirements?")
    code, out = cli("next")
    assert code == 3 and f"rein approvals accept {third}`" in out, out
    assert first["approval_id"] not in out
    code, where = driver.flow("spec")
    assert where["instruction"]["message"] == waiting["message"]
    person(run_id)

    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    assert pending_ids(cli) == []


def test_a_document_edited_while_its_gate_waited_is_checked_before_a_person_is_asked(
        repo: Path, cli: Cli, person: Callable[[str], str]) -> None:
    driver = SpecDriver(repo, cli)
    run_id, first = to_the_charter_gate(driver)

    def spoil(charter: dict[str, Any]) -> None:
        charter["non_goals"].append("TBD")
        charter["constraints"].append({"id": "C-1", "text": "no network access"})

    edit_charter(repo, spoil)
    code, _out = cli("resume", run_id)
    assert code == 1  # the gate failed: nobody was asked about the unchecked charter
    assert pending_ids(cli) == []
    _code, old = cli.json("approvals", "show", first["approval_id"])
    assert old["status"] == "cancelled"

    # `rein spec` gives the charter back to the agent with rein's reasons, as a refusal.
    code, where = driver.flow("spec")
    assert code == 0 and where["instruction"]["node"] == "write_charter", where
    assert where["notices"][0].startswith(
        "reopened specs/active/10-charter.json: it was edited after rein checked it, and "
        "rein refuses it now (no person was asked):\nspecs/active/10-charter.json is "
        "refused:\n")
    brief = where["instruction"]["brief"]
    assert "non_goals[2] says 'TBD'" in brief and "C-1 is used 2 times" in brief, brief
    assert [d["status"] for d in where["documents"]] == ["writing"] + ["planned"] * 4
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
