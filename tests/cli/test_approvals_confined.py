"""A process confined the way agent sandboxes confine it cannot answer an approval.

Every answer here is given by a real ``rein`` process run under a real sandbox: bubblewrap
(which sets no-new-privileges), ``setpriv --no-new-privs`` (util-linux), and the Codex CLI's
own sandbox where ``codex`` is installed. Each is refused with APPROVAL003 and nothing is
recorded, while the same command outside the sandbox answers: the refusal is the
confinement's doing, not the workspace's or the store's.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from tests.cli.approvals_env import (
    REIN,
    answer_in,
    gated,
    gated_waiting,
    nothing_recorded,
    refused,
)
from tests.scenarios.harness import Scenario

BWRAP = shutil.which("bwrap")
SETPRIV = shutil.which("setpriv")
# Installed by scripts/agent-clis.sh (make test), else from PATH.
AGENT_BIN = ROOT / ".venv" / "agents" / "node_modules" / ".bin"
CODEX = os.environ.get("REIN_TEST_CODEX") or (
    str(AGENT_BIN / "codex") if (AGENT_BIN / "codex").exists() else shutil.which("codex"))


def _works(argv: Sequence[str]) -> bool:
    try:
        done = subprocess.run([*argv, "true"], capture_output=True, timeout=60, check=False)
    except OSError:
        return False
    return done.returncode == 0


BWRAP_ARGS = ["--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"]
needs_bwrap = pytest.mark.skipif(BWRAP is None or not _works([BWRAP, *BWRAP_ARGS, "--"]),
                                 reason="bubblewrap is missing or cannot create namespaces")
needs_setpriv = pytest.mark.skipif(
    SETPRIV is None or not _works([SETPRIV, "--no-new-privs"]),
    reason="setpriv (util-linux) is missing or cannot set no-new-privileges")


@pytest.fixture
def waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
            ) -> tuple[Scenario, str]:
    return gated_waiting(tmp_path, monkeypatch, capsys)


def test_the_same_command_unconfined_answers_and_records_how(
        waiting: tuple[Scenario, str]) -> None:
    from rein.config.approver import os_account

    scenario, approval_id = waiting
    code, out = answer_in([], scenario, approval_id)
    assert (code, out["status"]) == (0, "accepted")
    [row] = [a for a in json.loads(scenario.rein("approvals", "list", "--all", "--json")[1])[
        "approvals"] if a["approval_id"] == approval_id]
    shown = json.loads(scenario.rein("approvals", "show", approval_id, "--json")[1])
    given = shown["answer"]["given"]
    assert given["surface"] == "cli" and given["confined"] is False
    assert given["terminal"] is False  # a new session: no controlling terminal
    assert given["identity"] == {"method": "os-user", "account": os_account(),
                                 "uid": os.getuid()}
    assert row["status"] == "accepted"


@needs_bwrap
@pytest.mark.parametrize("verb", ["accept", "decline", "cancel"])
def test_under_bubblewrap_an_answer_is_refused_and_nothing_recorded(
        waiting: tuple[Scenario, str], verb: str) -> None:
    scenario, approval_id = waiting
    assert BWRAP is not None
    refused(*answer_in([BWRAP, *BWRAP_ARGS, "--"], scenario, approval_id, verb))
    nothing_recorded(scenario, approval_id)


@needs_setpriv
def test_under_setpriv_no_new_privs_an_answer_is_refused(waiting: tuple[Scenario, str]) -> None:
    scenario, approval_id = waiting
    assert SETPRIV is not None
    refused(*answer_in([SETPRIV, "--no-new-privs"], scenario, approval_id))
    nothing_recorded(scenario, approval_id)


@pytest.mark.skipif(CODEX is None, reason="the Codex CLI is not installed (bash "
                    "scripts/agent-clis.sh, or REIN_TEST_CODEX=path/to/codex)")
def test_inside_the_codex_cli_sandbox_an_answer_is_refused(
        waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    scenario, approval_id = waiting
    assert CODEX is not None
    home, temp = tmp_path / "codex-home", tmp_path / "codex-tmp"
    home.mkdir()
    temp.mkdir()
    # The workspace profile: the workspace writable, so a refusal is not a read-only store.
    # Codex will not put its helper links under TMPDIR, so TMPDIR is a folder apart.
    env = {"CODEX_HOME": str(home), "TMPDIR": str(temp)}
    probe = subprocess.run([CODEX, "sandbox", "-P", ":workspace", "-C", str(scenario.root),
                            "--", "grep", "NoNewPrivs", "/proc/self/status"],
                           capture_output=True, text=True, timeout=120, check=False,
                           env={**os.environ, **env})
    if probe.returncode != 0:
        pytest.skip(f"the Codex CLI's sandbox does not run here: {probe.stderr[-300:]}")
    assert probe.stdout.split() == ["NoNewPrivs:", "1"]
    sandbox = [CODEX, "sandbox", "-P", ":workspace", "-C", str(scenario.root), "--"]
    refused(*answer_in(sandbox, scenario, approval_id, env=env))
    nothing_recorded(scenario, approval_id)


SRT = os.environ.get("REIN_TEST_SRT") or (
    str(AGENT_BIN / "srt") if (AGENT_BIN / "srt").exists() else shutil.which("srt"))


@pytest.mark.skipif(SRT is None, reason="Claude Code's sandbox runtime is not installed (bash "
                    "scripts/agent-clis.sh, or REIN_TEST_SRT=path/to/srt)")
def test_inside_claude_code_s_sandbox_an_answer_is_refused(
        waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    """`srt`, the sandbox Claude Code runs commands in, with the workspace writable."""
    scenario, approval_id = waiting
    assert SRT is not None
    settings = tmp_path / "srt-settings.json"
    settings.write_text(json.dumps({"network": {"allowedDomains": [], "deniedDomains": []},
                                    "filesystem": {"denyRead": [], "allowWrite": [
                                        str(scenario.root)], "denyWrite": []}}))
    probe = subprocess.run([SRT, "-s", str(settings), "-c", "grep NoNewPrivs /proc/self/status"],
                           cwd=scenario.root, capture_output=True, text=True, timeout=120,
                           check=False)
    if probe.returncode != 0:
        pytest.skip(f"Claude Code's sandbox does not run here: {probe.stderr[-300:]}")
    assert probe.stdout.split() == ["NoNewPrivs:", "1"]
    command = f"{REIN} approvals accept {approval_id} --no-continue --json"
    refused(*answer_in([SRT, "-s", str(settings), "-c"], scenario, approval_id,
                       command=command))
    nothing_recorded(scenario, approval_id)


def _account_config() -> Path:
    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".config"


@needs_bwrap
def test_an_opt_in_named_through_the_environment_does_not_count(
        waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    """The agent writes a rein.toml that lets confined processes answer and points
    XDG_CONFIG_HOME (and REIN_USER_CONFIG, and HOME) at it: still refused."""
    scenario, approval_id = waiting
    assert BWRAP is not None
    written = tmp_path / "agent" / ".config" / "rein" / "rein.toml"
    written.parent.mkdir(parents=True)
    written.write_text('[approver]\nanswer_when_confined = true\nroles = ["release"]\n')
    env = {"XDG_CONFIG_HOME": str(written.parent.parent), "HOME": str(tmp_path / "agent"),
           "REIN_USER_CONFIG": str(written), "REIN_MANAGED_CONFIG": str(written)}
    refused(*answer_in([BWRAP, *BWRAP_ARGS, "--"], scenario, approval_id, env=env))
    nothing_recorded(scenario, approval_id)


def _own_opt_in(tmp_path: Path) -> Path:
    own = tmp_path / "own-config"
    (own / "rein").mkdir(parents=True)
    (own / "rein" / "rein.toml").write_text("[approver]\nanswer_when_confined = true\n")
    return own


needs_config_dir = pytest.mark.skipif(
    not _account_config().is_dir(), reason="the account's home has no .config folder to mount "
    "over")


@needs_bwrap
@needs_config_dir
def test_the_account_s_own_opt_in_lets_a_confined_process_answer(
        waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    """The opt-in counts from the account's own file (the home the password database gives),
    here mounted read-only by bubblewrap over that home's .config for this one process, in a
    system read-only but for the workspace; the answer records that it came confined."""
    scenario, approval_id = waiting
    assert BWRAP is not None
    ws = str(scenario.root)
    mount = [BWRAP, "--ro-bind", "/", "/", "--bind", ws, ws, "--dev", "/dev", "--proc", "/proc",
             "--ro-bind", str(_own_opt_in(tmp_path)), str(_account_config()),
             "--die-with-parent", "--"]
    code, out = answer_in(mount, scenario, approval_id)
    assert (code, out.get("status")) == (0, "accepted"), out
    shown = json.loads(scenario.rein("approvals", "show", approval_id, "--json")[1])
    assert shown["answer"]["given"]["confined"] is True


@needs_bwrap
@needs_config_dir
def test_an_opt_in_the_confined_process_could_write_does_not_count(
        waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    """An agent whose sandbox can write the account's file (Codex run in the home folder)
    could have written the opt-in itself: refused."""
    scenario, approval_id = waiting
    assert BWRAP is not None
    mount = [BWRAP, *BWRAP_ARGS, "--bind", str(_own_opt_in(tmp_path)), str(_account_config()),
             "--"]
    refused(*answer_in(mount, scenario, approval_id))
    nothing_recorded(scenario, approval_id)


def test_runs_show_and_the_record_say_how_each_approval_was_given(
        waiting: tuple[Scenario, str]) -> None:
    """The gate answered by its own process, without a terminal; the graph approved when
    `rein run` started it: `runs show` (text and JSON) and the run record say how."""
    from rein.config.approver import os_account
    from rein.engine.run.record import record_problems

    scenario, approval_id = waiting
    code, _out = answer_in([], scenario, approval_id)
    assert code == 0
    code, out = scenario.rein("resume", scenario.last_run(), "--json")
    assert code == 0, out
    _code, text = scenario.rein("runs", "show")
    gate_line = next(i for i, line in enumerate(text.splitlines()) if approval_id in line)
    how = text.splitlines()[gate_line + 1].strip()
    assert how == (f"via cli, os-user (account {os_account()}), not confined, no terminal")
    _code, shown = scenario.rein("runs", "show", "--json")
    by_id = {a["approval_id"]: a for a in json.loads(shown)["approvals"]}
    assert by_id[approval_id]["given"]["surface"] == "cli"
    assert {a["kind"] for a in by_id.values()} == {"graph", "gate"}
    record = scenario.record()
    [event] = [e for n in record["nodes"] for e in n.get("human_events", [])]
    assert event["x-rein-approval"] == approval_id
    assert event["x-rein-given"]["identity"]["method"] == "os-user"
    assert record["metadata"]["x-rein-approved-given"]["surface"] == "cli"
    assert record_problems(record) == []


@needs_setpriv
def test_a_confined_process_approves_no_profile_change(tmp_path: Path) -> None:
    """Profile proposals and deltas under `writeback: propose` are approvals too."""
    data = Path(__file__).resolve().parents[1] / "profiles" / "data"
    profile = Path(shutil.copy(data / "notes.agent.md", tmp_path))
    before = profile.read_bytes()
    assert SETPRIV is not None
    done = subprocess.run(
        [SETPRIV, "--no-new-privs", str(REIN), "profile", "apply", "--workspace",
         str(tmp_path), "--approve", "--json", str(profile), str(data / "notes.delta.yaml")],
        capture_output=True, text=True, timeout=300, check=False, start_new_session=True)
    assert done.returncode == 4, done.stdout + done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "APPROVAL003"
    assert profile.read_bytes() == before


def _forced(sandbox: Sequence[str], scenario: Scenario, run_id: str
            ) -> tuple[int, dict[str, Any]]:
    """``rein resume RUN --force --json`` as its own process under ``sandbox``: its exit code
    and its JSON error, or the outcome (its last line)."""
    done = subprocess.run([*sandbox, str(REIN), "resume", run_id, "--force", "--json"],
                          cwd=scenario.root, capture_output=True, text=True, timeout=300,
                          check=False, env=dict(os.environ), start_new_session=True)
    if not done.stdout.strip():
        return done.returncode, {"stderr": done.stderr}
    try:  # an error: one JSON object
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:  # the events, one per line, then the outcome
        return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def _changed(scenario: Scenario) -> str:
    """The waiting run, its graph edited after the approval (what an agent would force)."""
    run_id = scenario.last_run()
    path = scenario.root / "g.agraph.yaml"
    path.write_text(path.read_text().replace("title: ", "title: edited ", 1))
    return run_id


def _forced_events(scenario: Scenario, run_id: str) -> list[dict[str, Any]]:
    code, out = scenario.rein("runs", "events", run_id, "--json")
    assert code == 0
    return [e for e in map(json.loads, out.splitlines()) if e.get("type") == "run/forced"]


@needs_setpriv
def test_under_setpriv_a_forced_resume_is_refused_and_nothing_recorded(
        waiting: tuple[Scenario, str]) -> None:
    # A forced resume approves the files as they are now: an agent that changed the approved
    # graph (to weaken a check) cannot approve its own change from its sandbox.
    scenario, _ = waiting
    assert SETPRIV is not None
    run_id = _changed(scenario)
    refused(*_forced([SETPRIV, "--no-new-privs"], scenario, run_id))
    assert _forced_events(scenario, run_id) == []
    code, out = scenario.rein("runs", "list", "--json")
    [run] = [r for r in json.loads(out)["runs"] if r["run_id"] == run_id]
    assert code == 0 and run["status"] == "awaiting_human"


def test_a_forced_resume_outside_a_sandbox_records_who_gave_it(
        waiting: tuple[Scenario, str]) -> None:
    from rein.config.approver import os_account

    scenario, _ = waiting
    run_id = _changed(scenario)
    code, _ = _forced([], scenario, run_id)
    assert code == 3  # continued under the files as they are now: at its gate again
    [forced] = _forced_events(scenario, run_id)
    given = forced["payload"]["given"]
    assert given["surface"] == "cli" and given["confined"] is False
    assert given["terminal"] is False
    assert given["identity"]["account"] == os_account()
    code, out = scenario.rein("runs", "events", run_id)
    assert code == 0
    assert "run FORCED on changed files (graph_digest; approved before: " in out
    assert "via cli (not confined, no terminal)" in out


@needs_setpriv
def test_a_run_approved_in_a_sandbox_is_not_advanced_by_a_persons_answer_outside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    # An agent in its sandbox writes a graph and starts it (its own approval, recorded as
    # confined). A person answers its gate from their terminal: the nodes after the gate
    # must not run in the person's process, outside the sandbox. The agent's resume, in
    # the sandbox, takes the answer up.
    assert SETPRIV is not None
    scenario = gated(tmp_path, monkeypatch, capsys, after=True)
    root = scenario.root
    digest = scenario.rein("graph", "digest", "g.agraph.yaml")[1].strip()
    confined = [SETPRIV, "--no-new-privs", str(REIN)]
    started = subprocess.run([*confined, "run", "g.agraph.yaml", "--approve", digest],
                             cwd=root, capture_output=True, text=True, timeout=300,
                             check=False, env=dict(os.environ), start_new_session=True)
    assert started.returncode == 3, started.stderr
    run_id = scenario.last_run()
    [gate] = scenario.pending()

    code, out = scenario.rein("approvals", "accept", gate["approval_id"])
    assert code == 0, out
    assert "not continued here" in out and f"rein resume {run_id}" in out
    assert "after" not in _ran(scenario, run_id)  # nothing ran in this process
    code, out = scenario.rein("next", "--json")
    told = json.loads(out)
    assert (told["for"], told["exit_code"]) == ("resume", 3)
    assert "approved from a sandbox" in told["message"]

    resumed = subprocess.run([*confined, "resume", run_id], cwd=root, capture_output=True,
                             text=True, timeout=300, check=False, env=dict(os.environ),
                             start_new_session=True)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "after" in _ran(scenario, run_id)


def _ran(scenario: Scenario, run_id: str) -> set[str]:
    """The nodes of ``run_id`` that started."""
    code, out = scenario.rein("runs", "events", run_id, "--json")
    assert code == 0
    return {e["payload"].get("node") for e in map(json.loads, out.splitlines())
            if e.get("type") == "node/started"}
