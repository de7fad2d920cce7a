"""Who answers an approval is the approver rein knows (``[approver]`` in the managed file or
the account's own, else the OS account), never a name typed on the command line, a project
file's say or a file the environment names, and an approval that names ``roles`` takes one
of them. No refusal tells the reader how to become an approver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import account_files

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


AGENT_TOML = '[approver]\nid = "release-bot"\nroles = ["release-manager"]\n'


@pytest.mark.parametrize("variable", ["XDG_CONFIG_HOME", "HOME", "REIN_USER_CONFIG",
                                      "REIN_MANAGED_CONFIG"])
def test_a_file_the_environment_names_cannot_make_an_approver(
        release: Scenario, tmp_path: Path, variable: str) -> None:
    """An agent writes a rein.toml that gives it the role and points a variable at it."""
    home = tmp_path / "agent-home"
    written = home / ".config" / "rein" / "rein.toml"
    written.parent.mkdir(parents=True)
    written.write_text(AGENT_TOML)
    value = {"XDG_CONFIG_HOME": home / ".config", "HOME": home}.get(variable, written)
    release.monkeypatch.setenv(variable, str(value))
    if variable == "HOME":
        release.monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
        release.monkeypatch.delenv("REIN_USER_CONFIG", raising=False)
    if variable == "XDG_CONFIG_HOME":
        release.monkeypatch.delenv("REIN_USER_CONFIG", raising=False)
    config = load_config(release.root)
    assert (config.approver.id, config.approver.roles) != ("release-bot", ("release-manager",))
    assert any(str(written) in n and "[approver] ignored" in n for n in config.notes)
    [pending] = release.pending()
    error = refusal(release, "approvals", "accept", pending["approval_id"])
    assert error["code"] == "APPROVAL_ROLE"
    assert release.pending() != []


def test_the_red_team_reproduction_in_its_own_process(release: Scenario,
                                                       tmp_path: Path) -> None:
    """As it was done: XDG_CONFIG_HOME at a rein.toml the agent wrote, then `rein approvals
    accept` as a process of its own (which reads the real account files, not a stand-in)."""
    config = tmp_path / "xdg"
    (config / "rein").mkdir(parents=True)
    (config / "rein" / "rein.toml").write_text(AGENT_TOML)
    [pending] = release.pending()
    env = {**os.environ, "XDG_CONFIG_HOME": str(config)}
    env.pop("REIN_USER_CONFIG", None)
    done = subprocess.run([str(Path(sys.executable).parent / "rein"), "approvals", "accept",
                           pending["approval_id"], "--no-continue", "--json"],
                          cwd=release.root, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 4, done.stdout + done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "APPROVAL_ROLE"
    assert release.pending() != []


def test_the_account_s_file_inside_the_workspace_is_not_read(release: Scenario) -> None:
    """Nodes and agents write in the workspace: an account file there says nothing."""
    _managed, user = account_files(release.monkeypatch, release.root / "home")
    user.parent.mkdir(parents=True)
    user.write_text('[approver]\nid = "ana"\nroles = ["release-manager"]\n')
    config = load_config(release.root)
    assert config.approver.roles == ()
    assert any("inside the workspace" in n for n in config.notes)
    [pending] = release.pending()
    assert refusal(release, "approvals", "accept", pending["approval_id"])["code"] == \
        "APPROVAL_ROLE"


@pytest.mark.parametrize("verb", ["accept", "decline"])
def test_no_refusal_teaches_how_to_become_an_approver(release: Scenario, verb: str) -> None:
    release.approver("bo", "developer")
    [pending] = release.pending()
    role = refusal(release, "approvals", verb, pending["approval_id"])
    actor = refusal(release, "approvals", verb, pending["approval_id"], "--actor", "ana")
    for error in (role, actor):
        text = f"{error['message']} {error.get('hint') or ''}"
        for teaching in ("rein.toml", "[approver]", "roles =", "XDG_CONFIG_HOME", ".config",
                         "answer_when_confined"):
            assert teaching not in text, (teaching, text)
    assert role["hint"] == "a person who holds release-manager answers it"
