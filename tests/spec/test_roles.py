"""The document approvals of `rein spec` ask the roles of the dev plan: ``[dev] plan_roles``
of the account's own rein.toml. An approver without one is refused at the gate, and READY
refuses an approval given without the roles (a run started before they were set)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from devflow_support import Cli
from spec_driver import SpecDriver, drive
from support import account_files

from rein.spec.paths import PLAN_PATH


def account(monkeypatch: pytest.MonkeyPatch, repo: Path, text: str) -> Path:
    _managed, user = account_files(monkeypatch, repo.parent / "account")
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(text)
    return user


def test_each_document_approval_asks_for_the_plan_roles(
        repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch,
        person: Callable[[str], str]) -> None:
    user = account(monkeypatch, repo, '[approver]\nid = "bo"\nroles = ["developer"]\n'
                   '[dev]\nplan_roles = ["tech-lead"]\n')
    driver = SpecDriver(repo, cli)
    _code, where = driver.flow("spec")
    _code, pending = driver.submit(driver.work(where["instruction"]))
    assert pending.get("for") == "approval", pending
    _code, queue = cli.json("approvals", "list")
    [row] = queue["approvals"]
    assert row["request"]["roles"] == ["tech-lead"]
    code, out = cli("approvals", "accept", row["approval_id"], "--json")
    assert code == 4 and json.loads(out)["error"]["code"] == "APPROVAL_ROLE"
    user.write_text('[approver]\nid = "ana"\nroles = ["tech-lead"]\n'
                    '[dev]\nplan_roles = ["tech-lead"]\n')
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where


def test_ready_refuses_approvals_given_without_the_roles(
        repo: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch,
        person: Callable[[str], str]) -> None:
    user = account(monkeypatch, repo, '[approver]\nid = "bo"\n')
    driver = SpecDriver(repo, cli)
    _code, where = driver.flow("spec")
    pending = where["instruction"]
    for _ in range(12):  # every document written and approved, `rein spec` not run again
        while pending["status"] == "instruction":
            _code, pending = driver.submit(driver.work(pending))
        if pending.get("for") != "approval":
            break
        person(where["run_id"])
        _code, pending = cli.json("next")
    assert pending["status"] == "done", pending
    user.write_text('[approver]\nid = "bo"\n[dev]\nplan_roles = ["tech-lead"]\n')
    code, out = cli.json("spec")
    assert (code, out["error"]["code"]) == (4, "SPEC003"), out
    assert "was not given by a holder of tech-lead" in out["error"]["message"]
    assert not (repo / PLAN_PATH).exists()
