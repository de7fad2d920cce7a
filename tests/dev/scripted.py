"""A scripted driver that really writes code: the test double of an IDE agent.

It reads what `rein dev` / `rein next --json` print, writes the files an agent would write
for the instruction's node, writes the envelope to .rein/inbox.json and runs
`rein submit --json`, through the real command line (``rein.cli.main``) or a subprocess.
The package it builds, ``tempconv``, has three features: ``c_to_f``, ``f_to_c`` and
``table`` (which depends on both).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

PYTHON = sys.executable
BAD_PLAN = {"verify": [PYTHON, "-m", "pytest", "-q"], "features": [
    {"id": "c_to_f", "title": "Celsius to Fahrenheit", "priority": 1, "depends_on": ["table"]},
    {"id": "table", "title": "A conversion table", "priority": 2, "depends_on": ["c_to_f"]}]}


def good_plan(verify: list[str] | None = None) -> dict[str, Any]:
    def test(name: str) -> list[str]:
        return [PYTHON, "-m", "pytest", "-q", f"tests/test_{name}.py"]

    return {"features": [
        {"id": "c_to_f", "title": "Celsius to Fahrenheit", "priority": 1,
         "description": "tempconv.c_to_f(c) returns the temperature in Fahrenheit.",
         "context": {"files": ["tempconv/__init__.py", "tests/test_c_to_f.py"],
                     "acceptance": ["c_to_f(100) == 212"]},
         "verify": verify or test("c_to_f")},
        {"id": "table", "title": "A conversion table", "priority": 1,
         "depends_on": ["c_to_f", "f_to_c"],
         "description": "tempconv.table(start, stop, step) lists (c, f) pairs.",
         "context": {"files": ["tempconv/table.py", "tests/test_table.py"]},
         "verify": verify or test("table")},
        {"id": "f_to_c", "title": "Fahrenheit to Celsius", "priority": 2,
         "description": "tempconv.f_to_c(f) returns the temperature in Celsius.",
         "context": {"files": ["tempconv/__init__.py", "tests/test_f_to_c.py"]},
         "verify": verify or test("f_to_c")}]}


C_TO_F_WRONG = "def c_to_f(c):\n    return c * 9 / 5\n"  # forgot the + 32
C_TO_F = "def c_to_f(c):\n    return c * 9 / 5 + 32\n"
F_TO_C = "\n\ndef f_to_c(f):\n    return (f - 32) * 5 / 9\n"
TABLE = ("from tempconv import c_to_f\n\n\n"
         "def table(start, stop, step):\n"
         "    return [(c, c_to_f(c)) for c in range(start, stop, step)]\n")
TESTS = {
    "c_to_f": "from tempconv import c_to_f\n\n\ndef test_boiling():\n"
              "    assert c_to_f(100) == 212\n",
    "f_to_c": "from tempconv import f_to_c\n\n\ndef test_freezing():\n"
              "    assert f_to_c(32) == 0\n",
    "table": "from tempconv.table import table\n\n\ndef test_table():\n"
             "    assert table(0, 101, 100) == [(0, 32), (100, 212)]\n",
}

Rein = Callable[..., tuple[int, str]]


class ScriptedDriver:
    """Answers each instruction of the flow; records what it was told."""

    def __init__(self, root: Path, rein: Rein, *, bad_plan_first: bool = True,
                 wrong_first: bool = True, plan: dict[str, Any] | None = None,
                 target: str = ".") -> None:
        self.root, self.rein, self.target = root, rein, target
        self.bad_plan_first, self.wrong_first = bad_plan_first, wrong_first
        self.plan = plan or good_plan()
        self.seen: list[dict[str, Any]] = []  # every instruction, in order
        self.context_usage: dict[str, int] | None = None

    def write(self, name: str, text: str, *, append: bool = False) -> None:
        """Write a file; the feature's files go into the target directory."""
        inside = name.startswith(("tempconv/", "tests/"))
        path = (self.root / self.target if inside else self.root) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a" if append else "w", encoding="utf-8") as fh:
            fh.write(text)

    def work(self, instruction: dict[str, Any]) -> dict[str, Any]:
        """Do the instruction's work in the workspace; the envelope to send."""
        self.seen.append(instruction)
        node, attempt = instruction["node"], instruction["attempt"]
        outputs: dict[str, Any] = {}
        if node == "plan":
            plan = BAD_PLAN if self.bad_plan_first and attempt == 1 else self.plan
            self.write(".rein/dev/plan.json", json.dumps(plan))
            outputs = {"plan": ".rein/dev/plan.json"}
        elif node == "feature_c_to_f":
            wrong = self.wrong_first and attempt == 1
            self.write("tempconv/__init__.py", C_TO_F_WRONG if wrong else C_TO_F)
            self.write("tests/test_c_to_f.py", TESTS["c_to_f"])
            outputs = {"summary": "c_to_f"}
        elif node == "feature_f_to_c":
            self.write("tempconv/__init__.py", F_TO_C, append=True)
            self.write("tests/test_f_to_c.py", TESTS["f_to_c"])
            outputs = {"summary": "f_to_c"}
        elif node == "feature_table":
            self.write("tempconv/table.py", TABLE)
            self.write("tests/test_table.py", TESTS["table"])
            outputs = {"summary": "table"}
        envelope = {"protocol": "rein.driver/1", "token": instruction["token"], "node": node,
                    "attempt": attempt, "status": "done", "outputs": outputs}
        if self.context_usage is not None:
            envelope["context_usage"] = self.context_usage
        return envelope

    def submit(self, envelope: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.write(".rein/inbox.json", json.dumps(envelope))
        code, out = self.rein("submit", "--json")
        return code, json.loads(out)

    def dev(self, *args: str) -> tuple[int, dict[str, Any]]:
        code, out = self.rein("dev", *args, "--json")
        return code, json.loads(out)


def git(root: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], cwd=root, check=check, capture_output=True,
                          text=True).stdout
