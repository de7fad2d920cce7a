"""The plan approval of `rein dev` can require roles: ``[dev] plan_roles`` in the account's
own rein.toml (never the project's, never a file the environment names). The agent that
drives the flow cannot accept its own plan, and a plan accepted without the role does not
start its features."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from devflow_support import Cli
from scripted import ScriptedDriver
from support import account_files


def plan_approval(driver: ScriptedDriver) -> dict[str, Any]:
    """Drive the flow (its planning instruction) until it waits for the plan approval."""
    driver.bad_plan_first = False
    _code, where = driver.dev()
    while where["instruction"]["status"] == "instruction":
        _code, where["instruction"] = driver.submit(driver.work(where["instruction"]))
    code, where = driver.dev()
    assert (code, where["instruction"].get("for")) == (3, "approval"), where
    return where


def pending(cli: Cli) -> dict[str, Any]:
    _code, queue = cli.json("approvals", "list")
    [row] = queue["approvals"]
    return dict(row)


def account(monkeypatch: pytest.MonkeyPatch, repo: Path, text: str,
            *, managed: str | None = None) -> Path:
    managed_path, user = account_files(monkeypatch, repo.parent / "account")
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(text)
    if managed is not None:
        managed_path.write_text(managed)
    return user


def test_the_plan_approval_asks_for_the_account_s_plan_roles(
        driver: ScriptedDriver, cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = account(monkeypatch, repo, '[approver]\nid = "bo"\nroles = ["developer"]\n'
                   '[dev]\nplan_roles = ["tech-lead"]\n')
    plan_approval(driver)
    row = pending(cli)
    assert row["request"]["roles"] == ["tech-lead"]
    code, out = cli("approvals", "accept", row["approval_id"], "--json")
    assert code == 4 and json.loads(out)["error"]["code"] == "APPROVAL_ROLE"
    assert pending(cli)["status"] == "pending"  # nothing was recorded
    user.write_text('[approver]\nid = "ana"\nroles = ["tech-lead"]\n'
                    '[dev]\nplan_roles = ["tech-lead"]\n')
    code, out = cli("approvals", "accept", row["approval_id"])
    assert code == 0, out
    _code, where = driver.dev()
    assert where["stage"] == "features", where


@pytest.mark.parametrize("where", ["project", "environment"])
def test_plan_roles_come_only_from_the_account_s_own_files(
        driver: ScriptedDriver, cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, where: str) -> None:
    """A project (or a file named through the environment) asking for plan roles is not
    obeyed either way: who may approve is the account's to say (noted in config show)."""
    text = '[dev]\nplan_roles = ["tech-lead"]\n'
    if where == "project":
        (repo / "rein.toml").write_text(text)
    else:
        (tmp_path / "named.toml").write_text(text)
        monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "named.toml"))
    plan_approval(driver)
    assert "roles" not in pending(cli)["request"] or pending(cli)["request"]["roles"] == []
    _code, shown = cli.json("config", "show")
    assert any("plan_roles ignored" in note for note in shown["notes"])


def test_the_account_cannot_drop_the_managed_plan_roles(
        driver: ScriptedDriver, cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    account(monkeypatch, repo, '[dev]\nplan_roles = []\n',
            managed='[dev]\nplan_roles = ["tech-lead"]\n')
    plan_approval(driver)
    assert pending(cli)["request"]["roles"] == ["tech-lead"]


def test_a_plan_accepted_without_the_role_does_not_start(
        driver: ScriptedDriver, cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Roles required after the plan was accepted by someone holding none: the feature run
    is refused (DEV008), not started."""
    user = account(monkeypatch, repo, '[approver]\nid = "bo"\n')
    plan_approval(driver)
    code, out = cli("approvals", "accept", pending(cli)["approval_id"])
    assert code == 0, out
    user.write_text('[approver]\nid = "bo"\n[dev]\nplan_roles = ["tech-lead"]\n')
    code, where = driver.dev()
    assert where.get("error", {}).get("code") == "DEV008", where
    assert "tech-lead" in where["error"]["message"]
    assert not (json.loads((repo / ".rein/dev/flow.json").read_text()).get("features_run"))


def test_the_plan_approval_records_the_driver_turn_it_followed(
        driver: ScriptedDriver, cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent submitted its plan, then the approval was answered: the answer says which
    driver turn it followed and how long after, so a self-approval a second later shows."""
    account(monkeypatch, repo, '[approver]\nid = "ana"\n')
    where = plan_approval(driver)
    row = pending(cli)
    code, out = cli("approvals", "accept", row["approval_id"])
    assert code == 0, out
    _code, shown = cli.json("approvals", "show", row["approval_id"])
    turn = shown["answer"]["given"]["after_driver_turn"]
    assert (turn["node"], turn["kind"], turn["status"]) == ("plan", "task", "answered")
    assert turn["submitted_at"] <= shown["answered_at"]
    assert isinstance(turn["seconds_after"], float) and turn["seconds_after"] >= 0
    _code, text = cli("runs", "show", where["planning_run"])
    assert f"s after the driver's turn on plan (attempt {turn['attempt']})" in text
