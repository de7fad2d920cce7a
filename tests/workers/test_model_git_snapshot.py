"""A model attempt's git snapshot (workers never commit) starts no process in a repository
whose files say its refs: on the event loop a process start holds every turn of the
process. Counted, not timed."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import rein
from tests.appserver.serve import reply, workspace
from tests.scenarios.model_env import isolate


def test_a_turn_in_a_git_workspace_starts_no_process_for_its_refs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)
    workspace(tmp_path, [reply("done")])
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "first"], cwd=tmp_path, check=True)
    started: list[Any] = []
    real = subprocess.Popen

    class Counted(real):  # type: ignore[misc,valid-type]
        def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
            started.append(args)
            super().__init__(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Counted)
    with rein.Harness.open(tmp_path) as harness:
        # workspace-write: the turn may run commands, so its refs are watched
        result = harness.start_thread(sandbox="workspace-write").run_sync("hello")
    assert result.status == "completed" and result.final_response == "done"
    assert [a for a in started if "show-ref" in list(a)] == []
