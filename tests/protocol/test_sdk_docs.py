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
    for document in blocks("yaml"):  # named by its first line, a comment
        name = document.splitlines()[0].removeprefix("#").strip()
        (tmp_path / name).write_text(document)
    monkeypatch.chdir(tmp_path)
    example = tmp_path / f"example_{number + 1}.py"
    example.write_text(blocks("python")[number])
    runpy.run_path(str(example), run_name="__main__")
    shown = capsys.readouterr()
    assert shown.out.strip()  # each example shows what it did
    assert shown.err == ""  # and nothing went wrong on the way (a store read after close)


def test_the_page_has_its_examples() -> None:
    assert len(blocks("python")) == 5
    assert [b.splitlines()[0] for b in blocks("yaml")] == ["# release.agraph.yaml"]
    examples = "\n".join(blocks("python"))
    # A program answers with words and imports nothing of rein's internals.
    assert "pending_turn(" in examples and 'harness.answer(gate.approval_id, "accept"' in examples
    assert "rein.core" not in examples and "rein.engine" not in examples
