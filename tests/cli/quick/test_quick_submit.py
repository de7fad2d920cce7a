"""``rein submit``'s plain forms skip click: the same output and exit code as the click
command, for an accepted envelope, a refused one and an error, and every other form is left
to click before anything is read or written."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from support import ROOT

from rein.cli import main
from rein.cli.app import cli
from rein.cli.quick.submit import quick_submit

DEMO = ROOT / "examples" / "driver-demo.agraph.yaml"
RIGHT = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'
Capture = pytest.CaptureFixture[str]

# What differs between two workspaces that did the same thing: ids, times, temp paths.
_VARYING = [(re.compile(r"\b(run|apv|drv)-[0-9A-Za-z-]+"), r"\1-ID"),
            (re.compile(r"\d+(\.\d+)?s\b"), "Ns"),
            (re.compile(r"\d{4}-\d\d-\d\dT[0-9:.]+Z?"), "TIME")]


def _same(text: str, root: Path) -> str:
    text = text.replace(str(root), "ROOT")
    for pattern, stand_in in _VARYING:
        text = pattern.sub(stand_in, text)
    return text


def _waiting(root: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture) -> str:
    """``root`` (now the current directory) with the demo run waiting for the driver, the
    answer to its instruction in .rein/inbox.json: the run id."""
    root.mkdir()
    shutil.copy(DEMO, root / DEMO.name)
    monkeypatch.chdir(root)
    assert main(["graph", "digest", DEMO.name]) == 0
    digest = capsys.readouterr().out.strip()
    assert main(["run", DEMO.name, "--approve", digest, "--json", "--quiet"]) == 3
    capsys.readouterr()
    assert main(["next", "--json"]) == 0
    instruction = json.loads(capsys.readouterr().out)
    (root / "greet.py").write_text(RIGHT)
    (root / ".rein" / "inbox.json").write_text(json.dumps(instruction["example"]))
    return str(instruction["run_id"])


def _click(args: list[str]) -> int:
    return int(cli.main(args=["submit", *args], prog_name="rein", standalone_mode=False))


def _both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture,
          form: list[str], prepare: Callable[[Path], None] = lambda _: None
          ) -> list[tuple[int, str, str]]:
    """The exit code, stdout and stderr of ``rein submit FORM`` through the quick path and
    through click, each in a workspace of its own in the same state."""
    seen = []
    for name, run in (("quick", quick_submit), ("click", _click)):
        root = tmp_path / name
        run_id = _waiting(root, monkeypatch, capsys)
        prepare(root)
        code = run([run_id if a == "RUN" else a for a in form])
        assert code is not None
        out, err = capsys.readouterr()
        seen.append((code, _same(out, root), _same(err, root)))
    return seen


@pytest.mark.parametrize("form", [[], ["--json"], [".rein/inbox.json"],
                                  ["--run", "RUN", "--json"], ["--json", ".rein/inbox.json"]])
def test_an_accepted_envelope_prints_what_the_click_command_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture,
        form: list[str]) -> None:
    quick, through_click = _both(tmp_path, monkeypatch, capsys, form)
    assert quick == through_click
    assert quick[0] == 3  # waiting at the gate
    text = quick[1] + quick[2]
    assert "accepted for write_module attempt 1" in text and "Ship greet.py?" in text


def _wrong(root: Path) -> None:
    envelope = json.loads((root / ".rein" / "inbox.json").read_text())
    (root / ".rein" / "inbox.json").write_text(json.dumps({**envelope, "token": "ins-nope"}))


@pytest.mark.parametrize("form", [[], ["--json"]])
def test_a_refused_envelope_prints_what_the_click_command_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture,
        form: list[str]) -> None:
    quick, through_click = _both(tmp_path, monkeypatch, capsys, form, _wrong)
    assert quick == through_click
    assert quick[0] == 4 and "DRIVER" in quick[1] + quick[2]
    if not form:  # stderr read on its own says where the pending instruction is
        assert quick[2].rstrip().endswith("is on standard output:"), quick[2]
        assert quick[1].lstrip().startswith("INSTRUCTION"), quick[1]


def test_the_envelope_read_from_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: Capture) -> None:
    import io
    import sys

    def stdin(root: Path) -> None:
        text = (root / ".rein" / "inbox.json").read_text()
        (root / ".rein" / "inbox.json").unlink()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))

    quick, through_click = _both(tmp_path, monkeypatch, capsys, ["-", "--json"], stdin)
    assert quick == through_click and quick[0] == 3


@pytest.mark.parametrize("form", [["--help"], ["--workspace", "."], ["--store", "x.db"],
                                  ["--run"], ["--run", "--json"], ["--json", "--json"],
                                  ["--run=abc"], ["--"], ["a.json", "b.json"], ["--verbose"],
                                  ["--run", "a", "--run", "b"], [""]])
def test_other_forms_are_left_to_click_before_anything_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture,
        form: list[str]) -> None:
    _waiting(tmp_path / "ws", monkeypatch, capsys)
    assert quick_submit(form) is None
    assert capsys.readouterr() == ("", "")  # nothing printed: click answers alone
    assert (tmp_path / "ws" / ".rein" / "inbox.json").exists()
    assert main(["next", "--json"]) == 0  # the instruction is still pending
    assert json.loads(capsys.readouterr().out)["status"] == "instruction"


@pytest.mark.parametrize("as_json", [False, True])
def test_no_store_is_reported_as_the_click_command_reports_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture,
        as_json: bool) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".rein").mkdir()
    (tmp_path / ".rein" / "inbox.json").write_text("{}")
    form = ["--json"] if as_json else []
    assert main(["submit", *form]) == 1
    first = capsys.readouterr()
    assert "STORE404" in (first.out if as_json else first.err)
    assert main(["submit", "--workspace", ".", *form]) == 1
    assert capsys.readouterr() == first
    assert not (tmp_path / ".rein" / "rein.db").exists()  # nothing was created
