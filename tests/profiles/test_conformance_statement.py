"""The conformance result is schema-valid, claims a level only as the rules allow, and every
test the statement cites exists."""

from __future__ import annotations

import ast
import importlib.resources
import json
import re
from pathlib import Path

import jsonschema_rs

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "docs" / "conformance" / "oap-result.json"
STATEMENT = ROOT / "docs" / "conformance" / "oap.md"
LEVEL_1 = [f"L1-P{i}" for i in range(1, 7)] + [f"L1-D{i}" for i in range(1, 5)] + [
    f"L1-I{i}" for i in range(1, 13)] + ["L1-R1", "L1-R2"]
LEVEL_2 = LEVEL_1 + [f"L2-S{i}" for i in range(1, 6)] + [f"L2-G{i}" for i in range(1, 5)] + [
    f"L2-A{i}" for i in range(1, 14)]
LEVEL_3 = LEVEL_2 + ["L3-E1", "L3-E2", "L3-M1", "L3-K1", "L3-Y1", "L3-B1", "L3-B2", "L3-G1",
                     "L3-G2", "L3-G3"]


def test_result_matches_the_package_schema_and_the_claim_rule() -> None:
    schema = json.loads(importlib.resources.files("oap").joinpath(
        "conformance/result.schema.json").read_text())
    result = json.loads(RESULT.read_text())
    jsonschema_rs.validate(schema, result)
    assert result["level"] == 3 and result["failed"] == []
    assert len(LEVEL_3) == 56 and set(LEVEL_3) <= set(result["passed"])


def test_every_cited_test_exists_and_passed_ids_match_the_table() -> None:
    text = STATEMENT.read_text()
    rows = re.findall(r"^\| (L[1-3]-[A-Z][0-9]+) \| (pass|gap) \| (.+?) \|$", text, re.MULTILINE)
    passed = {rid for rid, status, _ in rows if status == "pass"}
    assert passed == set(json.loads(RESULT.read_text())["passed"])
    for _, status, cell in rows:
        if status != "pass":
            continue
        path, name = cell.strip("`").split("::")
        tree = ast.parse((ROOT / path).read_text())
        assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, cell
