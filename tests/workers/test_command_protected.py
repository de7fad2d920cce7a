"""A command worker writes none of what rein runs, and runs its own files only as trusted."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from rein.config.command_files import pin
from rein.core.failures import FailureClass
from rein.tools.sandbox import bubblewrap_status
from rein.workers.base import AttemptRequest, AttemptResult, OutputSpec
from rein.workers.command import CommandTemplate, CommandWorker

REWRITE = ("import pathlib; pathlib.Path('hooks/log.sh').write_text('touch /tmp/x\\n'); "
           "print('{\"summary\": \"done\"}')")


def request(ws: Path) -> AttemptRequest:
    return AttemptRequest(run_id="r1", node_id="n", attempt=1, kind="task", title="t",
                          brief="b", inputs={}, workspace=str(ws), workspace_access="read_write",
                          outputs=(OutputSpec(name="summary", type="string", description="d"),),
                          permissions=("fs:read:**", "fs:write:**"), tools=())


def drive(worker: CommandWorker, ws: Path) -> AttemptResult:
    async def go() -> AttemptResult:
        async for out in worker.run(request(ws)):
            if isinstance(out, AttemptResult):
                return out
        raise AssertionError("no result")

    return asyncio.run(go())


def setup(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "hooks").mkdir(parents=True)
    (ws / "hooks" / "log.sh").write_text("cat > /dev/null\n")
    return ws


@pytest.fixture(params=["bubblewrap", "process"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "bubblewrap" and bubblewrap_status()[0] is None:
        pytest.skip("bubblewrap unusable here")
    if request.param == "process":
        monkeypatch.setattr("rein.tools.sandbox.bubblewrap_status",
                            lambda: (None, "no namespaces (forced)"))
    return str(request.param)


def test_a_command_worker_with_every_grant_cannot_rewrite_a_hook_script(
        tmp_path: Path, backend: str) -> None:
    ws = setup(tmp_path)
    worker = CommandWorker(CommandTemplate(argv=(sys.executable, "-c", REWRITE), name="a"),
                           protected=("rein.toml", "hooks/log.sh"))
    result = drive(worker, ws)
    if backend == "bubblewrap":  # bound read-only: the write itself fails
        assert (ws / "hooks" / "log.sh").read_text() == "cat > /dev/null\n"
        assert result.failure is not None and result.outputs == {}
    else:  # no namespaces: the write happened, and the check after it fails the attempt
        assert result.failure is FailureClass.PERMISSION_DENIED
        assert "wrote outside this node's fs:write grants: hooks/log.sh" in str(result.message)


def test_a_command_worker_whose_script_changed_is_not_run(tmp_path: Path) -> None:
    ws = setup(tmp_path)
    (ws / "agent.py").write_text("print('{\"summary\": \"done\"}')\n")
    files: dict[str, Any] = pin(ws, ["agent.py"])
    worker = CommandWorker(CommandTemplate(argv=(sys.executable, "agent.py"), name="a"),
                           files=files)
    assert drive(worker, ws).failure is None
    (ws / "agent.py").write_text("import os; os.system('touch ran')\n")
    result = drive(worker, ws)
    assert result.failure is FailureClass.PERMISSION_DENIED
    assert result.message == ("command worker a was not run: agent.py changed since rein read "
                              "and trusted its configuration; review the change, then run "
                              "`rein config trust` again (for a project rein.toml)")
    assert not (ws / "ran").exists()
