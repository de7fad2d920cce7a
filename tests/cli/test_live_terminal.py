"""The live view in a real pseudo-terminal: ``rein run`` is spawned on a pty, its output is
fed to a terminal emulator (pyte), and the test reads the screen a person would see."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.live_graphs import ANSWERS, FINAL, RETRIED

pyte: Any = pytest.importorskip("pyte", reason="pyte (test extra) renders the terminal's screen")

COLUMNS, LINES = 120, 50
REIN = str(Path(sys.executable).parent / "rein")


def _on_a_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """Run rein with stdin, stdout and stderr on one pty; everything it wrote, and its code."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    proc = subprocess.Popen([REIN, *args], cwd=cwd, env=env, stdin=slave, stdout=slave,
                            stderr=slave, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(timeout=120), out


def _screen(raw: bytes) -> list[str]:
    screen = pyte.Screen(COLUMNS, LINES)
    pyte.ByteStream(screen).feed(raw)
    return [line.rstrip() for line in screen.display]


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    (tmp_path / "g.agraph.yaml").write_text(yaml.safe_dump(RETRIED, sort_keys=False))
    (tmp_path / "answers.yaml").write_text(yaml.safe_dump(ANSWERS, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CI", "COLUMNS",
                                                            "LINES")}
    env.update(TERM="xterm-256color", REIN_SCRIPTED_ANSWERS=str(tmp_path / "answers.yaml"),
               REIN_USER_CONFIG=str(tmp_path / "none.toml"))
    return tmp_path, env


def _digest(cwd: Path, env: dict[str, str]) -> str:
    return subprocess.run([REIN, "graph", "digest", "g.agraph.yaml"], cwd=cwd, env=env,
                          check=True, capture_output=True, text=True).stdout.strip()


def _run_id(cwd: Path, env: dict[str, str]) -> str:
    listed = subprocess.run([REIN, "runs", "list"], cwd=cwd, env=env, check=True,
                            capture_output=True, text=True).stdout
    return listed.split()[0]


def test_the_live_view_shows_the_run_id_first_the_failed_attempt_and_every_final_state(
        workspace: tuple[Path, dict[str, str]]) -> None:
    cwd, env = workspace
    code, raw = _on_a_terminal(["run", "g.agraph.yaml", "--approve", _digest(cwd, env)],
                               cwd, env)
    assert code == 0, raw.decode(errors="replace")
    run_id = _run_id(cwd, env)
    lines = [line for line in _screen(raw) if line]
    # The plan comes first (it is what was approved), ending with its digest; the live view
    # begins right after it, with the run id.
    view = lines[next(i for i, line in enumerate(lines) if line.startswith("digest  ")) + 1:]
    assert view[0].startswith(f"run {run_id}  tests/live  succeeded")
    rows = {m["node"]: m["status"] for line in view
            if (m := re.match(r"^[✓✗…⏸·-] (?P<node>\S+)\s+(?P<status>\S+)", line))}
    assert rows == FINAL  # every node, in its final state; map and loop bodies are counted
    build = next(line for line in view if line.startswith("✓ build"))
    assert "(2 attempts)" in build
    failed = view[view.index(build) + 1]
    assert re.match(r"^\s+attempt 1\s+criteria_failed\s+.*criteria_failed: tests failed: "
                    r"2 of 10$", failed)
    assert "(3/3 items)" in next(line for line in view if line.startswith("✓ sort"))
    assert "(3 iterations)" in next(line for line in view if line.startswith("✓ count"))
    assert any(line.startswith("budget  $0.05 of $1.00 · 950 tokens · ") and
               line.endswith(" of 40 node executions") for line in view)
    assert view[-1] == f"run {run_id}: succeeded"  # the outcome, once, below the view
    assert raw.count(b"\x1b[") > 0 and b"\x1b[32m" in raw  # it redrew, in colour


def test_no_color_keeps_the_view_and_drops_the_colours(
        workspace: tuple[Path, dict[str, str]]) -> None:
    cwd, env = workspace
    code, raw = _on_a_terminal(["run", "g.agraph.yaml", "--approve", _digest(cwd, env)],
                               cwd, {**env, "NO_COLOR": "1"})
    assert code == 0
    assert not re.search(rb"\x1b\[[0-9;]*3[0-7](;[0-9]+)*m", raw)  # no foreground colour
    assert any(line.startswith("✓ build") for line in _screen(raw))


def test_quiet_shows_only_the_outcome(workspace: tuple[Path, dict[str, str]]) -> None:
    cwd, env = workspace
    code, raw = _on_a_terminal(["run", "g.agraph.yaml", "--approve", _digest(cwd, env),
                                "--quiet"], cwd, env)
    assert code == 0
    lines = [line for line in _screen(raw) if line]
    assert lines == [f"run {_run_id(cwd, env)}: succeeded"]


def test_a_pause_names_the_approval_to_answer(workspace: tuple[Path, dict[str, str]],
                                              ) -> None:
    cwd, env = workspace
    data: dict[str, Any] = yaml.safe_load((cwd / "g.agraph.yaml").read_text())
    data["nodes"]["ship"] = {"type": "gate", "title": "Ship", "description": "Ship it?",
                             "depends_on": ["sort", "count"],
                             "gate": {"mode": "approve", "prompt": "Ship the build?"}}
    (cwd / "g.agraph.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    code, raw = _on_a_terminal(["run", "g.agraph.yaml", "--approve", _digest(cwd, env)],
                               cwd, env)
    assert code == 3
    pending = subprocess.run([REIN, "approvals", "list"], cwd=cwd, env=env, check=True,
                             capture_output=True, text=True).stdout.split()[0]
    lines = _screen(raw)
    # Named once, by the view; the outcome below it says what to type, each command on a
    # line of its own, whole on an 80-column screen.
    waiting = f"waiting for approval {pending} (gate) ship: Ship the build?"
    assert sum(waiting in line for line in lines) == 1
    assert any(line.startswith(f"  look:    rein approvals show {pending}") for line in lines)
    assert any(line.startswith(f"  answer:  rein approvals accept {pending}")
               for line in lines)
    assert all(len(line) <= 80 for line in lines[lines.index(waiting) + 1:])
