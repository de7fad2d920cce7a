"""Answering "n" (or Ctrl-D) at rein's [y/N] questions is a choice: a "not approved" line that
says how to approve later, exit 4, no ``error:``, no ``Aborted!``, no traceback. Driven in a
real pseudo-terminal, because rein asks only when stdin is one."""

from __future__ import annotations

import os
import pty
import shutil
import sys
from pathlib import Path

import pytest
from support import EXAMPLES

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def _answer(cwd: Path, argv: list[str], prompt: bytes, answer: bytes) -> tuple[int, str]:
    """Run rein on a pty, type ``answer`` once ``prompt`` shows, read to the end."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: become rein
        os.chdir(cwd)
        os.execv(sys.executable, [sys.executable, "-c", "from rein.cli import run; run()",
                                  *argv])
    screen, sent = b"", False
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
        if not sent and prompt in screen:
            os.write(fd, answer)
            sent = True
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    assert sent, screen.decode(errors="replace")
    return os.waitstatus_to_exitcode(status), screen.decode(errors="replace")


@pytest.fixture(name="ws")
def ws_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc" / "rein.toml"))
    monkeypatch.setenv("NO_COLOR", "1")
    shutil.copyfile(EXAMPLES / "no-worker.agraph.yaml", tmp_path / "g.agraph.yaml")
    return tmp_path


@pytest.mark.parametrize("answer", [b"n\r", b"\x04"], ids=["n", "ctrl-d"])
def test_declining_to_run_is_a_choice(ws: Path, answer: bytes) -> None:
    code, screen = _answer(ws, ["run", "g.agraph.yaml"], b"and run? [y/N]", answer)
    assert code == 4
    assert "not approved: nothing ran" in screen
    assert "to run it later: rein run g.agraph.yaml --approve sha256-" in screen
    for noise in ("error:", "Aborted", "aborted", "Traceback"):
        assert noise not in screen
    assert not (ws / ".rein" / "runs").exists() or not any((ws / ".rein" / "runs").iterdir())


def test_declining_to_trust_is_a_choice(ws: Path) -> None:
    (ws / "rein.toml").write_text('[workers.command.fake]\nargv = ["true"]\n')
    code, screen = _answer(ws, ["config", "trust"], b"Trust these definitions? [y/N]", b"n\r")
    assert code == 4
    assert "not approved: nothing was recorded" in screen
    assert "to trust them later: rein config trust --workspace " in screen
    assert "error:" not in screen and "Traceback" not in screen
