"""Paths that come from documents or agents may hold a NUL byte, which names no file and
makes the OS raise ValueError: each check refuses it with a reason instead."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rein.engine.run.criteria.base import CriterionProblem, confined
from rein.engine.run.criteria.files import check_file_exists
from rein.engine.run.outputs import type_problem


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_an_output_path_with_nul_is_a_type_problem(tmp_path: Path, kind: str) -> None:
    problem = type_problem("a\x00b", kind, workspace=tmp_path)
    assert problem == "names 'a\\x00b', which contains a NUL byte"


def test_a_file_set_item_with_nul_is_a_type_problem(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("x")
    problem = type_problem(["ok.txt", "b\x00"], "file_set", workspace=tmp_path)
    assert problem == "item 1 names 'b\\x00', which contains a NUL byte"


def test_a_criterion_path_with_nul_is_crit002(tmp_path: Path) -> None:
    with pytest.raises(CriterionProblem) as info:
        confined(tmp_path, "report\x00.md", what="path")
    assert info.value.code == "CRIT002"
    assert "contains a NUL byte" in info.value.message


@pytest.mark.parametrize("pattern", ["out\x00.md", "out/*\x00.md"])
def test_file_exists_with_nul_is_crit002(tmp_path: Path, pattern: str) -> None:
    class Ctx:
        workspace = tmp_path

    ctx: Any = Ctx()
    with pytest.raises(CriterionProblem) as info:
        asyncio.run(check_file_exists({"path": pattern}, ctx))
    assert info.value.code == "CRIT002"
