"""Who answers an approval is the approver rein knows (``[approver]`` in the managed or user
rein.toml, else the OS account), never a name typed on the command line or a project file's
say, and an approval that names ``roles`` takes one of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.config import load_config
from rein.errors import ConfigError
from tests.cli.test_run_commands import GATED
from tests.scenarios.harness import Scenario


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Scenario:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    root = tmp_path / "ws"
    root.mkdir()
    scenario = Scenario(root, monkeypatch, capsys)
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "no-managed.toml"))
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    data = json.loads(json.dumps(GATED))
    data["nodes"]["ok"]["gate"]["roles"] = ["release-manager"]
    scenario.file("g.agraph.yaml", yaml.safe_dump(data, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}], "undo": [{"outputs": {}}]}})
    code, _ = scenario.run("g.agraph.yaml")
    assert code == 3
    return scenario


def refusal(scenario: Scenario, *args: str) -> dict[str, Any]:
    code, out = scenario.rein(*args, "--json")
    assert code == 4, out
    return dict(json.loads(out)["error"])


@pytest.mark.parametrize("verb", ["accept", "decline", "cancel"])
def test_a_gate_with_roles_refuses_an_approver_without_one(release: Scenario,
                                                           verb: str) -> None:
    release.approver("bo", "developer")
    [pending] = release.pending()
    error = refusal(release, "approvals", verb, pending["approval_id"])
    assert error["code"] == "APPROVAL_ROLE"
    assert "release-manager" in error["message"] and "bo" in error["message"]
    assert [p["approval_id"] for p in release.pending()] == [pending["approval_id"]]


def test_the_role_holder_answers_and_is_recorded_by_identity(release: Scenario) -> None:
    user = release.approver("ana", "release-manager", "developer")
    [pending] = release.pending()
    code, text = release.rein("approvals", "list")
    assert text.splitlines()[1].endswith(" · for: release-manager")  # who may answer
    code, _ = release.rein("approvals", "accept", pending["approval_id"])
    assert code == 0
    [event] = release.record()["nodes"][-1]["human_events"]
    assert event["actor"] == "ana"
    code, out = release.rein("approvals", "list", "--all", "--json")
    [row] = [a for a in json.loads(out)["approvals"] if a["kind"] == "gate"]
    assert row["request"]["roles"] == ["release-manager"]
    assert user.exists()


def test_actor_is_a_check_not_a_claim(release: Scenario) -> None:
    release.approver("bo", "developer")
    [pending] = release.pending()
    error = refusal(release, "approvals", "accept", pending["approval_id"], "--actor",
                    "release-manager-ana")
    assert error["code"] == "APPROVAL_ACTOR" and "bo" in error["message"]
    assert release.pending() != []


def test_a_project_file_cannot_name_the_approver(release: Scenario) -> None:
    from rein.config.approver import os_account

    release.file("rein.toml", '[approver]\nid = "ana"\nroles = ["release-manager"]\n')
    assert load_config(release.root).approver.id == os_account()
    assert any("[approver] ignored" in n for n in load_config(release.root).notes)
    [pending] = release.pending()
    assert refusal(release, "approvals", "accept", pending["approval_id"])["code"] == \
        "APPROVAL_ROLE"


def test_a_user_file_only_narrows_the_managed_roles(release: Scenario) -> None:
    release.approver("ana", "developer", managed=True)
    release.approver("mallory", "release-manager", "developer")
    approver = load_config(release.root).approver
    assert (approver.id, approver.roles) == ("ana", ("developer",))
    [pending] = release.pending()
    assert refusal(release, "approvals", "accept", pending["approval_id"])["code"] == \
        "APPROVAL_ROLE"


def test_a_gate_without_roles_is_answered_by_the_os_account(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from rein.config.approver import os_account

    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    monkeypatch.setenv("USER", "someone-else")  # the environment names nobody
    monkeypatch.setenv("LOGNAME", "someone-else")
    (tmp_path / "ws").mkdir()
    scenario = Scenario(tmp_path / "ws", monkeypatch, capsys)
    scenario.monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "none.toml"))
    scenario.monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "none-managed.toml"))
    scenario.file("g.agraph.yaml", yaml.safe_dump(GATED, sort_keys=False))
    scenario.answers({"nodes": {"work": [{"outputs": {}}]}})
    scenario.run("g.agraph.yaml")
    [pending] = scenario.pending()
    code, out = scenario.rein("approvals", "accept", pending["approval_id"], "--no-continue",
                              "--json")
    assert code == 0 and json.loads(out)["actor"] == os_account() != "someone-else"


def test_a_mistyped_approver_section_is_a_config_error(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[approver]\nid = "ana"\nrole = ["release-manager"]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, env={"REIN_USER_CONFIG": str(user),
                                   "REIN_MANAGED_CONFIG": str(tmp_path / "none.toml")})
    assert caught.value.code == "CFG004" and "role" in caught.value.message


def test_the_driver_is_told_a_person_answers_the_gate_not_the_agent(release: Scenario) -> None:
    code, out = release.rein("next", "--json")
    status = json.loads(out)
    assert (code, status["status"], status["for"]) == (3, "waiting", "approval")
    assert "a person must answer gate" in status["message"]
    assert "not the agent" in status["message"] and status["message"].endswith("and stop")
