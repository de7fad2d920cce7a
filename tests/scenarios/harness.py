"""Driving scenarios through the command line, as a person would: ``rein run``, then
``rein approvals``, in a fixture workspace with stub executables on ``PATH``."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.cli import main

STUB_OK = "#!/bin/sh\nexit 0\n"


class Scenario:
    """A workspace with a graph, scripted answers, stub tools and environment."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
        self.root = root
        self.capsys = capsys
        self.bin = root / ".stubs"
        self.bin.mkdir()
        monkeypatch.chdir(root)
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        self.monkeypatch = monkeypatch

    def stub(self, *names: str, script: str = STUB_OK) -> None:
        """Executables that succeed (or run ``script``) in place of real tools."""
        for name in names:
            path = self.bin / name
            path.write_text(script)
            path.chmod(path.stat().st_mode | stat.S_IEXEC)

    def python_stub(self) -> None:
        """``python`` → this interpreter, so ``python scripts/x.py`` criteria run for real."""
        self.stub("python", script=f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")

    def file(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def copy(self, source: Path, name: str | None = None) -> Path:
        target = self.root / (name or source.name)
        shutil.copyfile(source, target)
        return target

    def approver(self, name: str, *roles: str, managed: bool = False, extra: str = ""
                 ) -> Path:
        """Name who answers approvals here: the account's own rein.toml, or the managed
        one (their stand-ins, :func:`support.account_files`); ``extra``: more TOML lines
        of ``[approver]``."""
        from support import account_files

        toml = f'[approver]\nid = "{name}"\nroles = {json.dumps(list(roles))}\n{extra}'
        managed_path, user_path = account_files(self.monkeypatch,
                                                self.root.parent / f"{self.root.name}-files")
        path = managed_path if managed else user_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(toml)
        return path

    def answers(self, script: Mapping[str, Any]) -> None:
        self.file("answers.yaml", yaml.safe_dump(dict(script), sort_keys=False))
        self.monkeypatch.setenv("REIN_SCRIPTED_ANSWERS", str(self.root / "answers.yaml"))

    def rein(self, *args: str) -> tuple[int, str]:
        self.capsys.readouterr()
        code = main(list(args))
        out = self.capsys.readouterr().out
        return code, out

    def run(self, graph: str, *extra: str) -> tuple[int, str]:
        code, out = self.rein("graph", "digest", graph)
        assert code == 0, out
        return self.rein("run", graph, "--approve", out.strip(), "--json", *extra)

    def pending(self) -> list[dict[str, Any]]:
        code, out = self.rein("approvals", "list", "--json")
        assert code == 0, out
        return json.loads(out)["approvals"]

    def answer_all(self, verb: str = "accept", *, match: str | None = None,
                   extra: Iterable[str] = ()) -> int:
        """Answer pending approvals (whose node contains ``match``) until none is left."""
        code = 3
        for _ in range(50):
            todo = [a for a in self.pending()
                    if match is None or match in str(a["request"].get("node"))]
            if not todo:
                return code
            code, _ = self.rein("approvals", verb, todo[0]["approval_id"], "--json", *extra)
        raise AssertionError("approvals did not settle")

    def last_run(self) -> str:
        code, out = self.rein("runs", "list", "--json")
        assert code == 0
        return json.loads(out)["runs"][0]["run_id"]

    def record(self, run_id: str | None = None) -> dict[str, Any]:
        code, out = self.rein("runs", "record", run_id or self.last_run())
        assert code == 0, out
        return json.loads(out)

    def statuses(self, record: Mapping[str, Any]) -> dict[str, str]:
        return {n.get("scope_path", n["node_id"]): n["status"] for n in record["nodes"]}


def summary(out: str) -> dict[str, Any]:
    """The final JSON line of ``rein run --json``."""
    return json.loads(out.strip().splitlines()[-1])
