"""Helpers of the development-flow tests: the command line, a person, an agent's loop."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from scripted import ScriptedDriver, git

from rein.cli import main

BRIEF = "# tempconv\n\nA small Python package that converts temperatures.\n"


def new_project(root: Path) -> Path:
    """A fresh ``git init`` repository (no commits) holding the brief: where the dev and
    spec flows' tests and their pages' sessions start."""
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "brief.md").write_text(BRIEF)
    git(root, "init", "-q")
    return root


def captured(*args: str) -> tuple[int, str]:
    """``rein`` in this process, its stdout captured (outside pytest, for a page's refresh)."""
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(list(args))
    return code, buffer.getvalue()


class Cli:
    """``rein`` in this process, its stdout captured."""

    def __init__(self, capsys: Any) -> None:
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str]:
        self.capsys.readouterr()
        code = main(list(args))
        return code, self.capsys.readouterr().out

    def json(self, *args: str) -> tuple[int, dict[str, Any]]:
        code, out = self(*args, "--json")
        return code, json.loads(out)


def approve(cli: Cli) -> str:
    """A person accepts the pending approval of the feature graph; its id."""
    _code, queue = cli.json("approvals", "list")
    pending = [a for a in queue["approvals"] if a["status"] == "pending"]
    assert len(pending) == 1, queue
    code, out = cli("approvals", "accept", pending[0]["approval_id"])
    assert code == 0, out
    return str(pending[0]["approval_id"])


def drive(driver: ScriptedDriver, cli: Cli, *, turns: int = 40) -> tuple[int, dict[str, Any]]:
    """Run the flow as an agent would until `rein dev` stops waiting (a person approves
    the feature graph when asked); the last `rein dev --json` answer."""
    code, where = driver.dev()
    for _ in range(turns):
        if where["reason"] != "waiting":
            return code, where
        pending = where["instruction"]
        if pending["status"] == "instruction":
            while pending["status"] == "instruction":
                _code, pending = driver.submit(driver.work(pending))
        elif pending.get("for") == "approval":
            approve(cli)
        code, where = driver.dev()
    raise AssertionError(f"the flow did not stop in {turns} turns: {where}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for every purpose here (its parent, rein, was killed).
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")
