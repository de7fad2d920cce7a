"""The AGS conformance result is schema-valid, claims a level only with nothing failed, its
evidence matches the statement's table, and every test the statement names exists."""

from __future__ import annotations

import ast
import importlib.resources
import json
import re
from functools import cache
from pathlib import Path

import jsonschema_rs

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "docs" / "conformance" / "ags-result.json"
STATEMENT = ROOT / "docs" / "conformance" / "ags.md"
CITED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
EVIDENCE = re.compile(r"^\| ([\w-]+) \| (pass|gap) \| `(tests/[\w/]+\.py)::(\w+)` \|$",
                      re.MULTILINE)
# What the package's published level-3 results show as the evidence surface.
LEVEL_3 = {"all-valid-fixtures", "all-invalid-diagnostics", "AG131", "level-1-execution",
           "level-2-decisions-and-joins", "level-3-loop-map-subgraph", "run-record-schema",
           "rfc8785-digests"}


@cache
def functions(path: str) -> frozenset[str]:
    tree = ast.parse((ROOT / path).read_text())
    return frozenset(n.name for n in tree.body
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def test_result_matches_the_package_schema_and_the_claim_rule() -> None:
    schema = json.loads(importlib.resources.files("ags").joinpath(
        "conformance/result.schema.json").read_text())
    result = json.loads(RESULT.read_text())
    jsonschema_rs.validate(schema, result)
    assert result["failed"] == [], "a level is claimed only when nothing failed"
    assert result["level"] == 3 and LEVEL_3 <= set(result["passed"])


def test_evidence_rows_match_the_result() -> None:
    rows = EVIDENCE.findall(STATEMENT.read_text())
    result = json.loads(RESULT.read_text())
    assert {rid for rid, status, _, _ in rows if status == "pass"} == set(result["passed"])
    assert {rid for rid, status, _, _ in rows if status == "gap"} == set(result["failed"])


def test_every_cited_test_exists() -> None:
    cited = CITED.findall(STATEMENT.read_text())
    assert len(cited) > 80
    missing = [f"{path}::{name}" for path, name in cited
               if not (ROOT / path).is_file() or name not in functions(path)]
    assert missing == []
