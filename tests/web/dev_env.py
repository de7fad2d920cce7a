"""A development flow for the console's tests: a fresh git repository with a brief, the
command line in this process, and the scripted driver of the flow's own tests (it writes
the ``tempconv`` package; its first ``c_to_f`` forgets the ``+ 32``)."""

from __future__ import annotations

import concurrent.futures
import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from rein.cli import main
from tests.dev.scripted import ScriptedDriver, git, good_plan

BRIEF = "# tempconv\n\nA small Python package that converts temperatures.\n"


def cli(*args: str) -> tuple[int, str]:
    """``rein ARGS`` in this process, on a thread of its own (a caller such as
    Playwright's sync API has an event loop running on this one)."""
    out = io.StringIO()

    def run() -> int:
        with redirect_stdout(out):
            return main(list(args))

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        code = pool.submit(run).result()
    return code, out.getvalue()


def repository(root: Path) -> Path:
    (root / "specs").mkdir(parents=True, exist_ok=True)
    (root / "specs" / "brief.md").write_text(BRIEF)
    git(root, "init", "-q")
    return root


def driver(root: Path, *, python: str | None = None) -> ScriptedDriver:
    """The scripted agent; ``python`` names the interpreter in the verify commands (the
    running one by default)."""
    plan = good_plan()
    if python is not None:
        for feature in plan["features"]:
            feature["verify"] = [python, *feature["verify"][1:]]
    return ScriptedDriver(root, cli, bad_plan_first=False, plan=plan)


def step(d: ScriptedDriver) -> dict[str, Any]:
    """One turn of an agent: `rein dev`, then its instruction's work and submit, or a
    person's acceptance when a person is asked; where `rein dev` stood before it."""
    _code, where = d.dev()
    pending = where["instruction"]
    if where["reason"] != "waiting":
        return dict(where)
    if pending.get("status") == "instruction":
        d.submit(d.work(pending))
    elif pending.get("for") == "approval":
        code, out = cli("approvals", "list", "--json")
        [entry] = [a for a in json.loads(out)["approvals"] if a["status"] == "pending"]
        code, out = cli("approvals", "accept", entry["approval_id"])
        assert code == 0, out
    return dict(where)
