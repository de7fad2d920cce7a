"""`rein init --agent` names a rein the agent's shell finds: `.rein/bin/rein`.

An agent's commands often run in a login shell whose profile resets PATH (the Codex CLI
runs each with `bash -lc`): an activated virtual environment is lost and a bare `rein` is
"command not found". The script init writes runs the rein that wrote it, from any PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rein.cli import main
from rein.core.version import VERSION

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def init(root: Path, capsys: pytest.CaptureFixture[str], *agents: str) -> dict:  # type: ignore[type-arg]
    args = ["init", "--workspace", str(root), "--json"]
    for agent in agents:
        args += ["--agent", agent]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def login_shell(root: Path, line: str) -> subprocess.CompletedProcess[str]:
    """``line`` in a login shell with the PATH an agent's profile gives it: no venv."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root / "home"), "LANG": "C.UTF-8"}
    return subprocess.run(["bash", "-lc", line], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_files_command_runs_in_a_login_shell_that_lost_the_venv(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert login_shell(tmp_path, "command -v rein").returncode != 0  # what broke the agent
    said = init(tmp_path, capsys, "codex")
    assert said["command"] == {"path": ".rein/bin/rein", "action": "created",
                               "runs": sys.executable, "checked_with": "bash -lc"}
    assert ".rein/bin/rein next" in (tmp_path / "AGENTS.md").read_text()
    done = login_shell(tmp_path, ".rein/bin/rein --version")
    assert done.returncode == 0 and done.stdout.strip() == f"rein {VERSION}", done.stderr
    # rein's state, the script included, stays out of git.
    assert (tmp_path / ".rein" / ".gitignore").read_text() == "*\n"


def test_a_rein_package_in_the_workspace_is_never_what_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    init(tmp_path, capsys, "claude")
    planted = tmp_path / "rein"
    planted.mkdir()
    (planted / "__init__.py").write_text("print('planted')\n")
    (planted / "__main__.py").write_text("print('planted')\n")
    done = login_shell(tmp_path, ".rein/bin/rein --version")
    assert done.stdout.strip() == f"rein {VERSION}", done.stdout + done.stderr


def test_running_init_again_changes_nothing_and_a_gone_interpreter_is_explained(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    init(tmp_path, capsys, "codex")
    assert init(tmp_path, capsys, "codex")["command"]["action"] == "unchanged"
    shim = tmp_path / ".rein" / "bin" / "rein"
    shim.write_text(shim.read_text().replace(sys.executable, "/nonexistent/bin/python"))
    done = login_shell(tmp_path, ".rein/bin/rein next")
    assert done.returncode == 127
    assert "is gone: run 'rein init --agent ...' again" in done.stderr
    assert init(tmp_path, capsys, "codex")["command"]["action"] == "updated"
    assert os.access(shim, os.X_OK)


def test_a_script_that_does_not_run_is_refused_with_init001(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # An interpreter that cannot run the script (as on a workspace mounted noexec).
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    assert main(["init", "--agent", "codex", "--workspace", str(tmp_path), "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "INIT001" and ".rein/bin/rein --version" in error["message"]


def test_a_section_whose_end_marker_was_removed_is_refused_not_cut_to_a_later_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rein.cli.driver_init import END

    init(tmp_path, capsys, "claude")
    path = tmp_path / "CLAUDE.md"
    mine = path.read_text().replace(END + "\n", "") + "\n## Mine\n\nKept.\n"
    path.write_text(mine)
    for _ in range(2):  # once appended a second section; then cut up to its end marker
        assert main(["init", "--agent", "claude", "--workspace", str(tmp_path), "--json"]) == 1
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "INIT003"
    assert path.read_text() == mine


def test_an_end_marker_quoted_before_the_section_is_not_taken_for_its_end(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rein.cli.driver_init import END, START

    path = tmp_path / "CLAUDE.md"
    path.write_text(f"rein's section ends at `{END}`.\n")
    init(tmp_path, capsys, "claude")
    assert [f["action"] for f in init(tmp_path, capsys, "claude")["files"]] == ["unchanged"]
    assert path.read_text().count(START) == 1
