"""Every Python example in docs/sdk.md runs, as written, in a workspace configured the way
the page says (the scripted provider and its turns)."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import pytest
from support import ROOT

from tests.scenarios.model_env import isolate

DOC = ROOT / "docs" / "sdk.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text()) if lang == kind]


@pytest.mark.parametrize("number", range(len(blocks("python"))))
def test_the_example_runs(number: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    isolate(tmp_path, monkeypatch)
    [toml] = blocks("toml")
    [turns] = blocks("json")
    (tmp_path / "rein.toml").write_text(toml)
    (tmp_path / "turns.json").write_text(json.dumps(json.loads(turns)))
    monkeypatch.chdir(tmp_path)
    example = tmp_path / f"example_{number + 1}.py"
    example.write_text(blocks("python")[number])
    runpy.run_path(str(example), run_name="__main__")
    assert capsys.readouterr().out.strip()  # each example shows what it did


def test_the_page_has_its_examples() -> None:
    assert len(blocks("python")) == 3
