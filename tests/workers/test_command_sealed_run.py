"""A command worker runs the very bytes whose digest was checked: the workspace files its
argv runs are read once, hashed as they are copied to a folder in the attempt's private
directory (which the sandbox shows), and the agent runs the copies.

The race reproduced as for hooks (``tests/hooks/test_hook_sealed_run.py``): a process of the
same user rewrites the script in the instant between rein's check and the start. The seam is
the worker's call to start the sandboxed process (``rein.workers.command.run_sandboxed``),
the first thing after the check: the racer rewrites the script there, then the real start
goes on. Without the copies the rewritten script ran; here it must not.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import rein.workers.command as command_module
from rein.config import command_seal
from rein.config.command_seal import FOLDER_PREFIX
from rein.config.trust import bound_files
from rein.core.failures import FailureClass
from rein.tools.sandbox import bubblewrap_status
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind, OutputSpec
from rein.workers.command import CommandTemplate, CommandWorker

APPROVED = "#!/bin/sh\nprintf '{\"summary\": \"approved %s\"}\\n' \"$0\"\n"
EVIL = "#!/bin/sh\necho '{\"summary\": \"pwned\"}'\n"


@pytest.fixture(params=["bubblewrap", "process"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "bubblewrap" and bubblewrap_status()[0] is None:
        pytest.skip(f"bubblewrap unusable here: {bubblewrap_status()[1]}")
    if request.param == "process":  # the probe says no namespaces, as in some containers
        monkeypatch.setattr("rein.tools.sandbox.bubblewrap_status",
                            lambda: (None, "no namespaces (forced)"))
    return str(request.param)


@pytest.fixture(name="temp")
def temp_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory the attempt's private directory goes to, empty, to see what
    is left there."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


@pytest.fixture(name="ws")
def ws_fixture(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "agents").mkdir(parents=True)
    write(ws, "agents/run.sh", APPROVED)
    return ws


def write(ws: Path, name: str, body: str) -> None:
    path = ws / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)


def request(ws: Path, **kw: Any) -> AttemptRequest:
    base: dict[str, Any] = {
        "run_id": "r1", "node_id": "n", "attempt": 1, "kind": "task", "title": "t",
        "brief": "Write NOTE.md.", "inputs": {}, "workspace": str(ws),
        "workspace_access": "read_write", "tools": (),
        "outputs": (OutputSpec(name="summary", type="string", description="d"),),
        "permissions": ("fs:read:**", "fs:write:**")}
    return AttemptRequest(**{**base, **kw})


def trusted(ws: Path, argv: Sequence[str], *, search_path: str | None = None,
            **kw: Any) -> CommandWorker:
    """A command worker whose files are bound as trust binds them (rein.config.trust)."""
    bound = bound_files({"argv": list(argv)}, "command worker", ws,
                        search_path or os.environ["PATH"])
    assert "unsure" not in bound, bound
    return CommandWorker(CommandTemplate(argv=tuple(argv), name="agent", **kw),
                         files=bound.get("files"))


def drive(worker: CommandWorker, req: AttemptRequest) -> tuple[list[Item], AttemptResult]:
    async def go() -> tuple[list[Item], AttemptResult]:
        items: list[Item] = []
        async for out in worker.run(req):
            if isinstance(out, AttemptResult):
                return items, out
            items.append(out)
        raise AssertionError("no result")

    return asyncio.run(go())


def race(monkeypatch: pytest.MonkeyPatch, rewrite: Callable[[], None]) -> list[list[str]]:
    """Rewrite the workspace in the instant after the check, before the agent starts; for
    each start, the words of its argv that name files by their full path."""
    real = command_module.run_sandboxed
    started: list[list[str]] = []

    async def racing(argv: Sequence[str], **kw: Any) -> Any:
        rewrite()
        started.append(files_named(argv))
        return await real(argv, **kw)

    monkeypatch.setattr(command_module, "run_sandboxed", racing)
    return started


def files_named(argv: Sequence[str]) -> list[str]:
    return [w for w in argv if os.path.isabs(w) and os.path.isfile(w)]


def removed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The sealed folders removed, in order (the real removal still runs)."""
    real = command_seal._remove
    seen: list[Path] = []

    def spy(folder: Path) -> None:
        seen.append(folder)
        real(folder)

    monkeypatch.setattr(command_seal, "_remove", spy)
    return seen


def copy_path(summary: object) -> Path:
    """The ``$0`` an approved script reported: its copy, in a sealed folder in the attempt's
    private directory."""
    assert isinstance(summary, str) and summary.startswith("approved "), summary
    path = Path(summary.removeprefix("approved "))
    folder = next(p for p in path.parents if p.name.startswith(FOLDER_PREFIX))
    assert folder.parent.name.startswith("rein-command-"), path
    return path


# -- the race ------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["sh", "{workspace}/agents/run.sh"],  # an interpreter, the script by the workspace's path
    ["{workspace}/agents/run.sh"],  # a #! script the kernel starts
    ["sh", "agents/run.sh"],  # relative to the working directory, the workspace
    ["sh", "-c", "sh {workspace}/agents/run.sh"],  # the line of a shell's -c
])
def test_a_script_rewritten_after_the_check_does_not_run(
        ws: Path, temp: Path, backend: str, monkeypatch: pytest.MonkeyPatch,
        argv: list[str]) -> None:
    worker = trusted(ws, argv)
    assert set(worker.files) == {"agents/run.sh"}
    race(monkeypatch, lambda: write(ws, "agents/run.sh", EVIL))
    items, result = drive(worker, request(ws))
    assert result.failure is None, result.message
    ran = copy_path(result.outputs["summary"])  # the trusted bytes ran, from their copy
    assert ran.name == "run.sh" and ran.parent.name == "agents"
    assert "pwned" in (ws / "agents/run.sh").read_text()  # the race did rewrite the script
    # ... and the copy ran inside the sandbox, which shows the private directory
    assert [i.data["backend"] for i in items if i.kind is ItemKind.MESSAGE] == [backend]
    assert list(temp.iterdir()) == []  # the private directory and the copies are gone


def test_a_program_on_a_workspace_path_runs_from_its_copy(
        ws: Path, temp: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The attempt runs with the node's ``PATH`` (``bin`` of the workspace first), the one
    the files were bound with: the program found there runs from its copy."""
    write(ws, "bin/agent-cli", APPROVED)
    search_path = f"{ws / 'bin'}{os.pathsep}{os.environ['PATH']}"
    worker = trusted(ws, ["agent-cli", "{prompt_file}"], search_path=search_path)
    assert set(worker.files) == {"bin/agent-cli"}
    race(monkeypatch, lambda: write(ws, "bin/agent-cli", EVIL))
    _, result = drive(worker, request(ws, env={"PATH": search_path}))
    assert result.failure is None, result.message
    assert copy_path(result.outputs["summary"]).name == "agent-cli"
    assert list(temp.iterdir()) == []


def test_a_file_beside_the_script_that_trust_did_not_bind_is_read_from_the_workspace(
        ws: Path, temp: Path, backend: str) -> None:
    """The script runs from its copy; what it sources beside itself, unbound, is the
    workspace's file as before (through a link, inside the sandbox too)."""
    write(ws, "agents/run.sh", '#!/bin/sh\n. "$(dirname "$0")/lib.sh"\n'
          'printf \'{"summary": "%s from %s"}\\n\' "$said" "$(readlink "$(dirname "$0")/lib.sh")"\n')
    write(ws, "agents/lib.sh", "said=sourced\n")
    worker = trusted(ws, ["{workspace}/agents/run.sh"])
    assert list(worker.files) == ["agents/run.sh"]  # lib.sh is not bound
    _, result = drive(worker, request(ws))
    assert result.failure is None, result.message
    assert result.outputs["summary"] == f"sourced from {ws}/agents/lib.sh"
    assert list(temp.iterdir()) == []


def test_a_script_changed_before_the_check_is_not_run(
        ws: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    worker = trusted(ws, ["sh", "{workspace}/agents/run.sh"])
    write(ws, "agents/run.sh", EVIL)
    seen = removed(monkeypatch)
    started = race(monkeypatch, lambda: None)
    _, result = drive(worker, request(ws))
    assert result.failure is FailureClass.PERMISSION_DENIED
    assert result.message == ("command worker agent was not run: agents/run.sh changed since "
                              "rein read and trusted its configuration; review the change, "
                              "then run `rein config trust` again (for a project rein.toml)")
    assert started == []
    assert len(seen) == 1 and seen[0].name.startswith(FOLDER_PREFIX)  # copied, then removed
    assert list(temp.iterdir()) == []


# -- the folder goes on every way out ------------------------------------------------------


def test_the_copies_are_removed_after_a_run(
        ws: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    worker = trusted(ws, ["sh", "{workspace}/agents/run.sh"])
    seen = removed(monkeypatch)
    started = race(monkeypatch, lambda: None)
    _, result = drive(worker, request(ws))
    ran = copy_path(result.outputs["summary"])
    assert started and str(ran) in started[0]  # the copy was there when the agent started
    assert seen == [next(p for p in ran.parents if p.name.startswith(FOLDER_PREFIX))]
    assert not ran.exists() and list(temp.iterdir()) == []


def test_the_copies_are_removed_when_the_agent_cannot_start(
        ws: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The program is a workspace file that is not there (bound as absent): the start
    fails, after the script it names was copied."""
    monkeypatch.setattr("rein.tools.sandbox.bubblewrap_status", lambda: (None, "forced"))
    worker = trusted(ws, ["{workspace}/agents/missing", "{workspace}/agents/run.sh"])
    assert worker.files["agents/missing"] == "absent"
    seen = removed(monkeypatch)
    started = race(monkeypatch, lambda: None)
    _, result = drive(worker, request(ws))
    assert result.failure is FailureClass.TOOL_ERROR
    assert result.message == f"command not found: {ws}/agents/missing"
    assert len(started) == 1 and len(started[0]) == 1  # the copy of run.sh, named
    assert seen == [next(p for p in Path(started[0][0]).parents
                         if p.name.startswith(FOLDER_PREFIX))]
    assert list(temp.iterdir()) == []


def test_a_program_that_is_not_executable_is_a_tool_error_not_a_crash(
        ws: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rein.tools.sandbox.bubblewrap_status", lambda: (None, "forced"))
    (ws / "agents" / "plain.sh").write_text("echo hi\n")
    (ws / "agents" / "plain.sh").chmod(0o644)
    worker = CommandWorker(CommandTemplate(name="fake", argv=("{workspace}/agents/plain.sh",)))
    _, result = drive(worker, request(ws))
    assert result.failure is FailureClass.TOOL_ERROR
    assert result.message.startswith(f"command not executable: {ws}/agents/plain.sh")
    assert list(temp.iterdir()) == []


def test_the_copies_are_removed_after_a_timeout(
        ws: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(ws, "agents/run.sh", "#!/bin/sh\nexec sleep 30\n")
    worker = trusted(ws, ["sh", "{workspace}/agents/run.sh"], timeout_seconds=0.5)
    seen = removed(monkeypatch)
    started = race(monkeypatch, lambda: None)
    _, result = drive(worker, request(ws))
    assert result.failure is FailureClass.TIMEOUT
    assert len(started) == 1 and len(started[0]) == 1
    assert seen == [next(p for p in Path(started[0][0]).parents
                         if p.name.startswith(FOLDER_PREFIX))]
    assert list(temp.iterdir()) == []


# -- what is not a file --------------------------------------------------------------------


def test_the_prompt_is_never_read_for_files(
        ws: Path, temp: Path, backend: str) -> None:
    """``{prompt}`` after ``-c`` of a shell: trust left it out, so its text is not read as
    a shell line (a brief with backquotes does not split with certainty, and its words
    would be taken for files); it reaches the script as written."""
    write(ws, "agents/run.sh", APPROVED + 'case "$2" in *"Write NOTE.md."*) ;; *) exit 3;; esac\n')
    write(ws, "NOTE.md", "a workspace file trust did not bind\n")
    worker = trusted(ws, ["sh", "{workspace}/agents/run.sh", "-c", "{prompt}"])
    _, result = drive(worker, request(ws, brief="Write NOTE.md.\n\nNOTE.md"))
    assert result.failure is None, result.message
    copy_path(result.outputs["summary"])


def test_placeholders_inside_an_argument_are_filled_after_the_seal(
        ws: Path, temp: Path) -> None:
    """An argument that holds a placeholder among other text is read as trust read it
    (the placeholder as written) and filled once its file words name copies."""
    write(ws, "agents/run.sh", "#!/bin/sh\ngrep -q 'Write NOTE.md.' \"${1#--brief=}\" || exit 3\n"
          + APPROVED)
    worker = trusted(ws, ["sh", "{workspace}/agents/run.sh", "--brief={prompt_file}"])
    assert set(worker.files) == {"agents/run.sh", "{prompt_file}"}  # the word, as absent
    _, result = drive(worker, request(ws))
    assert result.failure is None, result.message
    copy_path(result.outputs["summary"])


def test_a_brief_that_spells_a_placeholder_reaches_the_agent_as_written(
        ws: Path, temp: Path) -> None:
    """Placeholders are filled in one pass: a value is not filled again."""
    write(ws, "agents/echo.sh", "#!/bin/sh\n"
          "case \"$1\" in *'keep {workspace} and {attempt}'*) "
          "echo '{\"summary\": \"kept\"}';; *) echo '{\"summary\": \"filled\"}';; esac\n")
    worker = trusted(ws, ["sh", "{workspace}/agents/echo.sh", "{prompt}"])
    _, result = drive(worker, request(ws, brief="Please keep {workspace} and {attempt}."))
    assert result.outputs == {"summary": "kept"}
