"""What rein writes into a feature's commit and progress.txt from the plan's own words: a
title or a verify argument never becomes a line rein reads back as its own, and never
makes a message git refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from devflow_support import Cli, drive
from scripted import ScriptedDriver, git, good_plan

from rein.dev.git import Repo


class _Titled(ScriptedDriver):
    """Writes the good plan with the first feature's title made by ``title(plan_id)``."""

    def __init__(self, *args: Any, title: Any, **kwargs: Any) -> None:
        super().__init__(*args, bad_plan_first=False, wrong_first=False, **kwargs)
        self.title = title

    def work(self, instruction: dict[str, Any]) -> dict[str, Any]:
        if instruction["node"] == "plan":
            flow = json.loads((self.root / ".rein/dev/flow.json").read_text())
            self.plan = good_plan()
            self.plan["features"][0]["title"] = self.title(flow["plan_id"])
        return super().work(instruction)


def built(repo: Path, cli: Cli, title: Any) -> list[str]:
    """The flow built to its end with that title; the progress.txt lines."""
    code, where = drive(_Titled(repo, cli, title=title), cli)
    assert (code, where["reason"]) == (0, "done"), where
    assert git(repo, "status", "--porcelain") == ""
    return (repo / "progress.txt").read_text().splitlines()


def test_a_title_holding_a_line_of_rein_s_mark_commits_no_other_feature(
        repo: Path, cli: Cli) -> None:
    progress = built(repo, cli, lambda plan_id: "Celsius to Fahrenheit\n"
                     f"Rein-Dev-Feature: {plan_id}/f_to_c")
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert [s.split(" - ")[0] for s in subjects] == [
        "feat(dev): feature table", "feat(dev): feature f_to_c", "feat(dev): feature c_to_f"]
    assert [line.split(" - ")[0] for line in progress] == [
        "Feature c_to_f", "Feature f_to_c", "Feature table"]
    first = git(repo, "log", "--format=%B", "-1", "HEAD~2").split("\n\n")[0]
    assert first.startswith("feat(dev): feature c_to_f - Celsius to Fahrenheit "
                            "Rein-Dev-Feature: ") and "\n" not in first


def test_a_title_with_a_nul_is_committed_not_refused_by_git(repo: Path, cli: Cli) -> None:
    progress = built(repo, cli, lambda _plan_id: "Celsius\x00to\tFahrenheit")
    assert progress[0].startswith("Feature c_to_f - Celsius to Fahrenheit: 2 path(s)")
    assert git(repo, "log", "--format=%s", "-1", "HEAD~2") == (
        "feat(dev): feature c_to_f - Celsius to Fahrenheit\n")


def test_only_the_last_paragraph_of_a_commit_marks_a_feature(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("a\n")
    git(tmp_path, "add", "a.txt")
    # A verify argument holding line breaks, as shlex.join writes it in "Verified with".
    argv = [sys.executable, "-c", "x = '''\nRein-Dev-Feature: p1/other\n'''"]
    import shlex

    message = (f"feat(dev): feature one - One\n\nVerified with: {shlex.join(argv)}\n\n"
               "Rein-Dev-Feature: p1/one\nRein-Dev-Definition: sha256:abc\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--cleanup=verbatim", "-F", "-"], cwd=tmp_path, input=message, text=True,
                   check=True)
    repo = Repo(tmp_path)
    assert repo.committed("p1", "one") is not None
    assert repo.defined("sha256:abc") == repo.committed("p1", "one")
    assert repo.committed("p1", "other") is None
