"""The web console's evaluation pages: the list of the workspace's evaluations, and one
evaluation's results drawn as `rein eval --html` draws them, over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_eval

from tests.web.conftest import Console, make_console


@pytest.fixture
def console(ws: Path) -> Iterator[Console]:
    yield from make_console(ws)


def test_the_evaluations_and_their_results(ws: Path, console: Console, capsys: Any) -> None:
    console.login()
    empty = console.client.get("/evals")
    assert empty.status_code == 200 and "No evaluation in this workspace" in empty.text
    assert 'href="/evals"' in empty.text  # in the navigation
    code, result = run_eval(capsys, str(SUITE / "fix-greeting"), str(SUITE / "count-lines"),
                            "--config", "oracle", "--config", "nop")
    assert code == 0
    evaluation = result["evaluation"]
    listed = console.client.get("/evals").text
    assert f"/evals/{evaluation}" in listed and "oracle, nop" in listed
    page = console.client.get(f"/evals/{evaluation}")
    assert page.status_code == 200
    assert "<svg" in page.text and page.text.count("<rect") == 2
    assert "oracle: <span class=ok>solves every scenario" in page.text
    assert "fix-greeting" in page.text and "count-lines" in page.text


def test_an_unfinished_or_unknown_evaluation(ws: Path, console: Console) -> None:
    console.login()
    folder = ws / ".rein" / "evals" / "eval-20260101T000000-abcdef"
    folder.mkdir(parents=True)
    (folder / "plan.json").write_text(json.dumps({"format": 1, "configurations": [],
                                                  "scenarios": []}))
    page = console.client.get("/evals/eval-20260101T000000-abcdef")
    assert page.status_code == 200 and "Not finished" in page.text
    assert "rein eval --resume eval-20260101T000000-abcdef" in page.text
    assert console.client.get("/evals/eval-nope").status_code == 404
    assert console.client.get("/evals/..%2Fplan").status_code == 404
