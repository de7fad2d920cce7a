"""The "Try it" section of docs/profiles-as-workers.md, run as written: its four files are
written verbatim into an empty workspace and its commands run in order, with RUN replaced by
the run's id. If the page and rein disagree, this fails."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from support import ROOT, account_files

from rein.cli import main
from tests.scenarios.model_env import isolate

PAGE = ROOT / "docs" / "profiles-as-workers.md"
# "`name`, what it is:" (one paragraph), a blank line, then the file's fenced block.
_FILE = re.compile(r"^`([^`]+)`[,:](?:[^\n]|\n(?!\n))*\n\n```\w+\n(.*?)```",
                   re.DOTALL | re.MULTILINE)


def section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## Try it: a profile served by the scripted provider")
    return text[start:text.index("\n## ", start + 1)]


def files() -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _FILE.finditer(section())}


def commands() -> list[list[str]]:
    block = section().split("```console\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line.removeprefix("$ "), comments=True) for line in block.splitlines()]


def test_the_section_names_its_files_and_commands() -> None:
    assert sorted(files()) == [".agents/doc-writer.agent.yaml", "note.agraph.yaml", "rein.toml",
                               "turns.json"]
    assert [c[:3] for c in commands()][:2] == [["rein", "profile", "validate"],
                                                ["rein", "run", "note.agraph.yaml"]]


def write_files(root: Path, monkeypatch: pytest.MonkeyPatch, **replace: str) -> None:
    isolate(root, monkeypatch)
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    _managed, user = account_files(monkeypatch, root.parent / f"{root.name}-account")  # who approves: the reader
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[approver]\nid = "reader"\n')
    monkeypatch.chdir(root)
    for name, text in files().items():
        for old, new in replace.items():
            text = text.replace(old, new)
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def test_the_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    write_files(tmp_path, monkeypatch)

    def rein(args: list[str]) -> tuple[int, str]:
        capsys.readouterr()
        code = main(args)
        return code, capsys.readouterr().out

    run_id = ""
    outputs: dict[str, tuple[int, str]] = {}
    for words in commands():
        assert words[0] == "rein"
        args = [w.replace("RUN", run_id) for w in words[1:]]
        substituted = re.fullmatch(r"\$\((rein [^)]*)\)", args[-1])
        if substituted:  # --approve "$(rein graph digest ...)"
            code, digest = rein(shlex.split(substituted.group(1))[1:])
            assert code == 0
            args[-1] = digest.strip()
        code, out = rein(args)
        assert code == 0, (words, out)
        outputs[" ".join(words[1:3])] = (code, out)
        if words[1] == "run":
            run_id = re.search(r"run (run-\S+): succeeded", out).group(1)  # type: ignore[union-attr]

    assert (tmp_path / "docs" / "note.md").read_text() == "A note.\n"
    record = json.loads(outputs["runs record"][1])
    assert record["status"] == "succeeded"
    [attempt] = record["nodes"][0]["attempts"]
    assert attempt["x-rein-profile"]["delta"] == f".rein/profiles/deltas/{run_id}/note-1.json"
    history = outputs["profile history"][1]
    assert history.startswith("r2  ") and "approved by reader" in history


def test_with_edit_ask_the_write_waits_for_a_person(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    write_files(tmp_path, monkeypatch, **{"edit: allow": "edit: ask"})
    assert main(["graph", "digest", "note.agraph.yaml"]) == 0
    digest = capsys.readouterr().out.strip()
    assert main(["run", "note.agraph.yaml", "--approve", digest]) == 3
    assert not (tmp_path / "docs" / "note.md").exists()
    capsys.readouterr()
    assert main(["approvals", "list", "--json"]) == 0
    [pending] = json.loads(capsys.readouterr().out)["approvals"]
    assert pending["kind"] == "tool_call"
    assert main(["approvals", "accept", pending["approval_id"]]) == 0
    assert "succeeded" in capsys.readouterr().out
    assert (tmp_path / "docs" / "note.md").read_text() == "A note.\n"
