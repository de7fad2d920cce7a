"""A suite's TOML files (scenario.toml, eval.toml, a Harbor task.toml) that cannot be read
are refused with their code, the file (once) and a fix, whatever they hold: never a
traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_eval

from rein.errors import ConfigError
from rein.eval.toml_files import read_toml

DEEP = "x = " + "[" * 100_000 + "]" * 100_000 + "\n"


@pytest.mark.parametrize(("text", "message", "line", "hint"), [
    ("[scenario\n", ("scenario.toml is not valid TOML: Expected ']' at the end of a table "
                     "declaration"), 1,
     "fix the TOML syntax at line 1, column 10 (https://toml.io)"),
    (DEEP, "scenario.toml is not valid TOML: the file nests too deeply", None,
     "the file holds small tables of strings and numbers"),
    ("x = 1" + "0" * 5000 + "\n", ("scenario.toml is not valid TOML: the file holds a "
                                   "number too large to read"), None,
     "the file holds small tables of strings and numbers"),
    ("[scenario]\nparams = { t = nan }\n",
     "scenario.toml is not valid TOML: t is nan, which is not a finite number",
     None, "use a finite number"),
])
def test_a_file_that_cannot_be_read_is_refused_with_its_place_and_a_fix(
        tmp_path: Path, text: str, message: str, line: int | None, hint: str) -> None:
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_toml(path, code="EVAL002", what="scenario.toml")
    error = caught.value
    assert (error.code, error.message, error.hint) == ("EVAL002", message, hint)
    assert error.location is not None and error.location.file == str(path)
    assert error.location.line == line


def test_a_harbor_task_keeps_the_numbers_harbor_reads(tmp_path: Path) -> None:
    path = tmp_path / "task.toml"
    path.write_text("[agent]\ntimeout_sec = inf\n")
    assert read_toml(path, code="EVAL003", what="task.toml", json_numbers=False) == {
        "agent": {"timeout_sec": float("inf")}}


@pytest.mark.parametrize(("name", "code"), [("scenario.toml", "EVAL002"),
                                            ("eval.toml", "EVAL005"),
                                            ("task.toml", "EVAL003")])
def test_rein_eval_refuses_a_file_nested_past_the_parser(
        ws: Path, tmp_path: Path, capsys: Any, name: str, code: str) -> None:
    """tomllib raises RecursionError for deep nesting: it came out as a traceback."""
    import shutil

    suite = tmp_path / "suite"
    shutil.copytree(SUITE / "fix-greeting", suite / "fix-greeting")
    if name == "task.toml":
        shutil.copytree(SUITE / "harbor-hello", suite / "harbor-hello")
        target = suite / "harbor-hello" / name
    else:
        target = suite / ("fix-greeting" if name == "scenario.toml" else "") / name
    target.write_text(DEEP)
    exit_code, out = run_eval(capsys, str(suite), "--config", "oracle")
    assert (exit_code, out["error"]["code"]) == (64, code)
    assert out["error"]["message"].endswith("is not valid TOML: the file nests too deeply")
    assert str(target) not in out["error"]["message"]  # the place is its location, once
    assert out["error"]["location"]["file"] == str(target)
    assert not (ws / ".rein").exists()
