"""Nothing a configurations file runs runs until a person approves it: its hooks, command
workers and providers are bound by digest (with the suite files they run and the scenarios
they run over) to an approval recorded beside the account's own rein.toml, which a confined
process cannot give; the trials then run those files only with the approved bytes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, digest_to_approve, run_eval

from rein.config import load_config
from rein.eval.approval import approvals_file, read_approvals, review
from rein.eval.configs import builtin, load_configurations
from rein.eval.scenarios import find_scenarios

HOOKED = """
[configurations.plain]
description = "the scripted test double: runs nothing of the suite's"
[configurations.plain.rein]
policy = { shell = "allow" }
[configurations.plain.rein.providers.script]
kind = "scripted"
options = { script = "{scenario}/model.json", position = "conversation" }
[configurations.plain.rein.tiers.standard]
provider = "script"
model = "scripted"

[configurations.hooked]
extends = "plain"
[configurations.hooked.rein.hooks.mark]
command = ["python3", "{suite}/hooks/mark.py"]
events = ["PreToolUse"]
"""


def mark(where: Path) -> str:
    """A hook that marks that it ran (``where/ran``: beside the file it is written to,
    outside every trial) and lets the call through. The folder is named in the text: a
    hook runs from a copy of its checked bytes, whose own path is the copy's."""
    return f"""import pathlib, sys
sys.stdin.read()
pathlib.Path({str(where / "ran")!r}).write_text("ran")
"""


def hooked_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    shutil.copytree(SUITE / "fix-greeting", suite / "fix-greeting")
    (suite / "hooks").mkdir()
    (suite / "hooks" / "mark.py").write_text(mark(suite / "hooks"))
    (suite / "eval.toml").write_text(HOOKED)
    return suite


def test_a_hook_runs_nothing_until_approved_and_then_only_as_approved(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    suite = hooked_suite(tmp_path)
    ran = suite / "hooks" / "ran"
    args = (str(suite), "--config", "hooked")
    code, out = run_eval(capsys, *args)
    assert (code, out["error"]["code"]) == (4, "EVAL021")
    digest = out["error"]["digest"]
    assert "hooks.mark" in out["error"]["message"] and digest in out["error"]["hint"]
    assert not ran.exists() and not (ws / ".rein").exists()  # refused before anything
    assert not approvals_file().exists()

    code, out = run_eval(capsys, *args, "--approve", "sha256:" + "0" * 64)
    assert (code, out["error"]["code"], out["error"]["digest"]) == (4, "EVAL022", digest)
    assert not ran.exists()

    code, result = run_eval(capsys, *args, "--approve", digest)
    assert code == 0 and ran.exists()
    assert result["approval"]["digest"] == digest
    [record] = read_approvals(approvals_file()).values()
    assert record["configurations"] == ["hooked"]
    assert record["given"]["surface"] == "cli" and record["given"]["confined"] is False

    ran.unlink()
    code, result = run_eval(capsys, *args)  # the same content: approved already
    assert code == 0 and ran.exists()

    (suite / "hooks" / "mark.py").write_text(mark(suite / "hooks") + "# edited\n")
    assert digest_to_approve(capsys, *args) != digest  # a changed script: asked again


def test_what_needs_approval_and_what_does_not(ws: Path, tmp_path: Path) -> None:
    suite = hooked_suite(tmp_path)
    declared = load_configurations(suite / "eval.toml")
    scenarios = find_scenarios([suite])
    base = load_config(ws)
    assert review([builtin("oracle"), builtin("nop"), declared["plain"]], scenarios,
                  base).digest is None
    found = review([declared["plain"], declared["hooked"]], scenarios, base)
    [need] = found.needs
    [item] = need.items
    assert (need.configuration, item.key, item.kind) == ("hooked", "hooks.mark", "hook")
    assert dict(item.files) == {"hooks/mark.py": _sha(suite / "hooks" / "mark.py")}
    assert found.pins == {"hooked": {"hooks.mark": {
        str(suite.resolve() / "hooks" / "mark.py"): _sha(suite / "hooks" / "mark.py")}}}
    assert found.scenarios == {"fix-greeting": scenarios[0].digest}
    # A scenario's files take part: a hook runs in a workspace made from them.
    (suite / "fix-greeting" / "workspace" / "extra.txt").write_text("new\n")
    again = review([declared["hooked"]], find_scenarios([suite]), base)
    assert again.digest != found.digest


def test_a_command_whose_files_cannot_be_told_cannot_be_approved(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    suite = hooked_suite(tmp_path)
    (suite / "eval.toml").write_text(HOOKED.replace(
        'command = ["python3", "{suite}/hooks/mark.py"]',
        'command = "python3 $SOMEWHERE/mark.py"'))
    code, out = run_eval(capsys, str(suite), "--config", "hooked")
    assert (code, out["error"]["code"]) == (64, "EVAL023")
    assert not (ws / ".rein").exists()


def test_a_hook_whose_script_changed_after_the_approval_is_not_run(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    """The approval binds the bytes: a script rewritten between the approval and a trial
    (by anyone) makes the hook refuse to run, and its trial stops."""
    from rein.eval.runner import Options, run, start

    suite = hooked_suite(tmp_path)
    base = load_config(ws)
    digest = digest_to_approve(capsys, str(suite), "--config", "hooked")
    ledger, loaded = start(ws, [suite], ["hooked"], configs_file=None, options=Options(),
                           base=base, approve=digest)
    (suite / "hooks" / "mark.py").write_text(mark(suite / "hooks")
                                             + "# rewritten after the approval\n")
    [trial] = run(ledger, loaded, options=Options(), base=base, env={}, say=lambda _t: None)
    assert not (suite / "hooks" / "ran").exists()
    assert trial.status == "failed", trial
    assert "hooks/mark.py changed" in json.dumps(trial.failures)


def test_a_scenario_file_a_hook_runs_is_run_only_as_approved(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    """A hook that runs a file of each scenario (``{scenario}/...``) runs it only with the
    bytes approved: one rewritten after the approval is not run, as a suite file is not."""
    from rein.eval.runner import Options, run, start

    suite = hooked_suite(tmp_path)
    script = suite / "fix-greeting" / "mark.py"
    script.write_text(mark(script.parent))
    (suite / "eval.toml").write_text(HOOKED.replace("{suite}/hooks/mark.py",
                                                    "{scenario}/mark.py"))
    base = load_config(ws)
    digest = digest_to_approve(capsys, str(suite), "--config", "hooked")
    ledger, loaded = start(ws, [suite], ["hooked"], configs_file=None, options=Options(),
                           base=base, approve=digest)
    assert loaded.review.pins_for("hooked", "fix-greeting")["hooks.mark"] == {
        str(script): _sha(script)}
    script.write_text(mark(script.parent) + "# rewritten after the approval\n")
    [trial] = run(ledger, loaded, options=Options(), base=base, env={}, say=lambda _t: None)
    assert not (suite / "fix-greeting" / "ran").exists()
    assert trial.status == "failed", trial
    assert "mark.py changed" in json.dumps(trial.failures)


# The agent under test writes, into its own workspace, the file an approved hook runs from
# there: the hook would run the agent's code outside its sandbox.
PLANT = [
    {"tool_calls": [{"name": "file_write", "arguments": {
        "path": "hook.py", "content": "import pathlib\npathlib.Path(PLANTED).write_text('ran')\n"}}]},
    {"tool_calls": [{"name": "file_read", "arguments": {"path": "hello.txt"}}]},
    {"tool_calls": [{"name": "file_write", "arguments": {"path": "hello.txt",
                                                         "content": "hello\n"}}]},
    {"tool_calls": [{"name": "submit_outputs", "arguments": {"summary": "done"}}]},
]


def test_the_agent_cannot_plant_a_file_an_approved_hook_runs_from_its_workspace(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    suite = hooked_suite(tmp_path)
    planted = tmp_path / "planted"
    scenario = suite / "fix-greeting"
    (scenario / "model.json").write_text(json.dumps(PLANT).replace("PLANTED",
                                                                  repr(str(planted))))
    graph = scenario / "graph.agraph.yaml"
    graph.write_text(graph.read_text().replace('"fs:write:hello.txt"', '"fs:write:**"'))
    (suite / "eval.toml").write_text(HOOKED.replace(
        'command = ["python3", "{suite}/hooks/mark.py"]',
        'command = ["python3", "hook.py"]\nmatcher = "file_read"'))
    found = review(list(load_configurations(suite / "eval.toml").values()),
                   find_scenarios([suite]), load_config(ws))
    # Bound where the hook runs: relative to the trial's workspace, absent from its fixture.
    assert found.pins_for("hooked", "fix-greeting")["hooks.mark"]["hook.py"] == "absent"
    code, result = run_eval(capsys, str(suite), "--config", "hooked", "--approve",
                            str(found.digest))
    assert code == 0, result
    assert not planted.exists()  # the hook never ran the agent's file
    [trial] = result["trials"]
    trajectory = Path(trial["folder"]) / "agent" / "trajectory.json"
    assert "hook.py is protected" in trajectory.read_text()


SETPRIV = shutil.which("setpriv")


def _confines() -> bool:
    if SETPRIV is None:
        return False
    done = subprocess.run([SETPRIV, "--no-new-privs", "grep", "NoNewPrivs", "/proc/self/status"],
                          capture_output=True, text=True, check=False)
    return done.returncode == 0 and done.stdout.split() == ["NoNewPrivs:", "1"]


@pytest.mark.skipif(not _confines(), reason="setpriv cannot set no-new-privileges here")
def test_a_confined_process_cannot_approve(ws: Path, tmp_path: Path, capsys: Any) -> None:
    """A real rein process under no-new-privileges (as an agent's sandbox runs it) is refused
    with APPROVAL003, and nothing is recorded or run."""
    suite = hooked_suite(tmp_path)
    digest = digest_to_approve(capsys, str(suite), "--config", "hooked")
    before = approvals_file()  # the test's stand-in; the subprocess reads the account's own
    script = textwrap.dedent(f"""
        import sys
        from rein.cli import main
        from rein.eval.approval import approvals_file, read_approvals
        file = approvals_file()
        had = {{k for k in read_approvals(file)}}
        code = main(["eval", {str(suite)!r}, "--config", "hooked", "--approve", {digest!r},
                     "--json", "-q"])
        assert {digest!r} not in read_approvals(file) or {digest!r} in had
        sys.exit(code)
        """)
    assert SETPRIV is not None
    done = subprocess.run([SETPRIV, "--no-new-privs", sys.executable, "-c", script],
                          cwd=ws, capture_output=True, text=True, check=False, timeout=120)
    out = json.loads(done.stdout)
    assert (done.returncode, out["error"]["code"]) == (4, "APPROVAL003"), done.stderr
    assert not (suite / "hooks" / "ran").exists() and not (ws / ".rein").exists()
    assert not before.exists()


def _sha(path: Path) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_person_at_a_terminal_is_asked_and_a_no_runs_nothing(
        ws: Path, tmp_path: Path) -> None:
    from rein.errors import Refused
    from rein.eval.runner import Options, start

    suite = hooked_suite(tmp_path)
    base = load_config(ws)
    shown: list[list[str]] = []

    def no(found: Any) -> bool:
        shown.append(found.describe())
        return False

    with pytest.raises(Refused) as refused:
        start(ws, [suite], ["hooked"], configs_file=None, options=Options(), base=base, ask=no)
    assert refused.value.code == "EVAL021"
    [lines] = shown
    assert any("hooks.mark (hook)" in line for line in lines)
    assert any(line.strip().startswith("runs hooks/mark.py (sha256:") for line in lines)
    assert not approvals_file().exists() and not (ws / ".rein").exists()

    _ledger, loaded = start(ws, [suite], ["hooked"], configs_file=None, options=Options(),
                            base=base, ask=lambda _found: True)
    assert set(read_approvals(approvals_file())) == {loaded.review.digest}


def test_a_resumed_evaluation_runs_only_what_was_approved(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    """An evaluation left unfinished whose hook script changed since its approval is not
    resumed (EVAL010): the hook would run bytes nobody approved."""
    from rein.eval.runner import Options, start

    suite = hooked_suite(tmp_path)
    base = load_config(ws)
    digest = digest_to_approve(capsys, str(suite), "--config", "hooked")
    ledger, _loaded = start(ws, [suite], ["hooked"], configs_file=None, options=Options(),
                            base=base, approve=digest)
    (suite / "hooks" / "mark.py").write_text(mark(suite / "hooks")
                                             + "# rewritten before the resume\n")
    code, out = run_eval(capsys, "--resume", ledger.id)
    assert (code, out["error"]["code"]) == (64, "EVAL010")
    assert not (suite / "hooks" / "ran").exists() and ledger.entries() == {}
