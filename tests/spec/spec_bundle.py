"""A good specification bundle for the tempconv brief of tests/dev, as a driver writes it:
the documents of `rein spec`, each a JSON object (copied before changing one)."""

from __future__ import annotations

import copy
import sys
from typing import Any

PYTHON = sys.executable


def _test(name: str) -> list[str]:
    return [PYTHON, "-m", "pytest", "-q", f"tests/test_{name}.py"]


GOOD: dict[str, dict[str, Any]] = {
    "charter": {
        "goal": "A small Python package, tempconv, that converts temperatures.",
        "scope": ["Celsius to Fahrenheit", "Fahrenheit to Celsius", "a conversion table"],
        "non_goals": ["Kelvin", "a command line"],
        "stakeholders": [{"name": "developers", "interest": "a tested conversion library"}],
        "constraints": [{"id": "C-1", "text": "Python 3.11 standard library only"}]},
    "requirements": {
        "requirements": [
            {"id": "FR-1", "kind": "functional", "priority": "must",
             "statement": "tempconv.c_to_f(c) returns the temperature in Fahrenheit",
             "fit_criterion": "c_to_f(100) == 212", "constraints": ["C-1"]},
            {"id": "FR-2", "kind": "functional", "priority": "must",
             "statement": "tempconv.f_to_c(f) returns the temperature in Celsius",
             "fit_criterion": "f_to_c(32) == 0"},
            {"id": "FR-3", "kind": "functional", "priority": "should",
             "statement": "tempconv.table(start, stop, step) lists (c, f) pairs",
             "fit_criterion": "table(0, 101, 100) == [(0, 32), (100, 212)]"}],
        "retired": []},
    "design": {
        "components": [
            {"id": "CMP-1", "name": "tempconv", "responsibility": "the conversions",
             "requirements": ["FR-1", "FR-2"]},
            {"id": "CMP-2", "name": "tempconv.table", "responsibility": "the table",
             "requirements": ["FR-3"]}],
        "interfaces": [{"id": "IF-1", "name": "functions", "description": "plain functions",
                        "components": ["CMP-1", "CMP-2"]}],
        "data": [],
        "decisions": [{"id": "D-1", "decision": "floats in, floats out",
                       "reason": "no rounding surprises for callers",
                       "requirements": ["FR-1", "FR-2"]}]},
    "acceptance": {
        "checks": [{"id": "AC-1", "requirements": ["FR-1"], "check": "c_to_f(100) == 212"},
                   {"id": "AC-2", "requirements": ["FR-2"], "check": "f_to_c(32) == 0"},
                   {"id": "AC-3", "requirements": ["FR-3"],
                    "check": "table(0, 101, 100) == [(0, 32), (100, 212)]"}]},
    "readiness": {
        "open_questions": [{"id": "Q-1", "question": "Is rounding wanted?",
                            "assumption": "no rounding"}],
        "risks": [{"id": "RISK-1", "risk": "float equality in tests",
                   "mitigation": "values chosen to be exact"}],
        "slices": [
            {"id": "c_to_f", "title": "Celsius to Fahrenheit", "priority": 1,
             "description": "tempconv.c_to_f(c)", "serves": ["FR-1"],
             "files": ["tempconv/__init__.py", "tests/test_c_to_f.py"],
             "verify": _test("c_to_f")},
            {"id": "table", "title": "A conversion table", "priority": 1,
             "description": "tempconv.table(start, stop, step)", "serves": ["FR-3"],
             "depends_on": ["c_to_f", "f_to_c"],
             "files": ["tempconv/table.py", "tests/test_table.py"],
             "verify": _test("table")},
            {"id": "f_to_c", "title": "Fahrenheit to Celsius", "priority": 2,
             "description": "tempconv.f_to_c(f)", "serves": ["FR-2"],
             "files": ["tempconv/__init__.py", "tests/test_f_to_c.py"],
             "verify": _test("f_to_c")}]},
}


def good() -> dict[str, dict[str, Any]]:
    return copy.deepcopy(GOOD)
