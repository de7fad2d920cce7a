"""A hook runs the very bytes whose digest was checked: its workspace files are read once,
hashed as they are copied to a private folder, and the hook runs the copies.

The race reproduced: a process of the same user rewrites the hook's script in the instant
between rein's check and the start. The seam is the runner's call to start the process
(``rein.tools.hooks.run_process``), the first thing after the check: the racer rewrites
every bound file there, then the real start goes on. Without the copies the rewritten script
ran (it did about once in 40 tries with a real racing process); here it must not.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import rein.tools.hooks as hooks_module
from rein.config import command_seal
from rein.config.command_files import command_files, pin
from rein.config.command_seal import FOLDER_PREFIX, sealed_command, word_spans
from rein.core.shellsplit import split_commands
from rein.tools.hooks import ChainOutcome, Hook, HookRunner
from rein.tools.process import GROUP_WATCH

APPROVED = '{ cat; echo approved; } > "$REIN_PROJECT_DIR/ran"\n'
CALL = {"tool_name": "shell", "tool_input": {"command": "ls"}}


@pytest.fixture(name="temp")
def temp_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory rein's folders go to, empty, to see what is left there."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


@pytest.fixture(name="ws")
def ws_fixture(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "hooks").mkdir(parents=True)
    return ws


@pytest.fixture(name="outside")
def outside_fixture(tmp_path: Path) -> Path:
    """Where only a rewritten script writes."""
    outside = tmp_path / "outside"
    outside.mkdir()
    return outside


def write(ws: Path, name: str, body: str, *, executable: bool = False) -> None:
    path = ws / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755 if executable else 0o644)


def trusted(ws: Path, command: str | Sequence[str], *, files: Sequence[str] = (),
            search_path: str | None = None, **kw: Any) -> Hook:
    """A hook whose files are bound as trust binds them (the PATH it runs with)."""
    found = command_files(command, ws, search_path=search_path or os.environ["PATH"],
                          extra=files)
    assert found.unsure is None, found.unsure
    return Hook(name="log", command=command if isinstance(command, str) else tuple(command),
                events=("PreToolUse",), files=pin(ws, found.paths), **kw)


def run(ws: Path, hook: Hook, *, env: dict[str, str] | None = None) -> ChainOutcome:
    runner = HookRunner([hook], cwd=ws, session_id="s", env=env)
    return asyncio.run(runner.run("PreToolUse", CALL, tool="shell"))


def race(monkeypatch: pytest.MonkeyPatch, rewrite: Callable[[], None]) -> list[Any]:
    """Rewrite the workspace in the instant after the check, before the hook starts."""
    real = hooks_module.run_process
    started: list[Any] = []

    async def racing(command: Any, **kw: Any) -> Any:
        rewrite()
        started.append(command)
        return await real(command, **kw)

    monkeypatch.setattr(hooks_module, "run_process", racing)
    return started


def evil(outside: Path) -> str:
    return f'touch "{outside}/pwned"\ncat > /dev/null\n'


# -- the race ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    "sh hooks/log.sh",  # an interpreter named on the line
    ["hooks/log.sh"],  # a #! script the kernel starts
    'sh "$REIN_PROJECT_DIR"/hooks/log.sh',
    ["sh", "-c", "sh hooks/log.sh"],  # the line of a shell's -c
    "sh < hooks/log.sh",  # an input redirection
])
def test_a_script_rewritten_after_the_check_does_not_run(
        ws: Path, outside: Path, temp: Path, monkeypatch: pytest.MonkeyPatch,
        command: str | list[str]) -> None:
    write(ws, "hooks/log.sh", "#!/bin/sh\n" + APPROVED, executable=True)
    hook = trusted(ws, command)
    race(monkeypatch, lambda: write(ws, "hooks/log.sh", "#!/bin/sh\n" + evil(outside),
                                    executable=True))
    out = run(ws, hook)
    assert [(r.status, r.message) for r in out.runs] == [("completed", "")]
    assert not (outside / "pwned").exists()
    assert (ws / "ran").read_text().endswith("approved\n")  # the trusted bytes ran
    assert "pwned" in (ws / "hooks/log.sh").read_text()  # the race did rewrite the script
    assert list(temp.iterdir()) == []  # and the copies are gone


def test_a_module_the_script_imports_from_its_files_is_the_checked_one(
        ws: Path, outside: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(ws, "hooks/check.py", "import helper\nhelper.main()\n")
    write(ws, "hooks/helper.py", "import os, sys\n\ndef main():\n    sys.stdin.read()\n"
          "    open(os.environ['REIN_PROJECT_DIR'] + '/ran', 'w').write('approved\\n')\n")
    hook = trusted(ws, [sys.executable, "hooks/check.py"], files=["hooks/helper.py"])
    race(monkeypatch, lambda: write(
        ws, "hooks/helper.py", f"def main():\n    open({str(outside / 'pwned')!r}, 'w')\n"))
    out = run(ws, hook)
    assert out.runs[0].status == "completed", out.runs[0].message
    assert not (outside / "pwned").exists()
    assert (ws / "ran").read_text() == "approved\n"


def test_a_program_put_on_a_workspace_path_after_the_check_does_not_run(
        ws: Path, outside: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bin`` is on PATH before the system's and holds no ``sh`` when checked (bound as
    absent): one created there in that instant is not the ``sh`` that runs."""
    write(ws, "hooks/log.sh", APPROVED)
    search_path = f"{ws / 'bin'}{os.pathsep}{os.environ['PATH']}"
    hook = trusted(ws, "sh hooks/log.sh", search_path=search_path)
    assert hook.files["bin/sh"] == "absent"
    race(monkeypatch, lambda: write(ws, "bin/sh", "#!/bin/dash\n" + evil(outside),
                                    executable=True))
    out = run(ws, hook, env={**os.environ, "PATH": search_path})
    assert out.runs[0].status == "completed", out.runs[0].message
    assert not (outside / "pwned").exists()
    assert (ws / "ran").read_text().endswith("approved\n")


def test_a_copy_changed_after_it_was_written_does_not_run(
        ws: Path, outside: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copies the line runs are hashed once more just before the start."""
    write(ws, "hooks/log.sh", APPROVED)
    hook = trusted(ws, "sh hooks/log.sh")
    copy = command_seal._Seal.copy

    def tampered(seal: Any) -> list[str]:
        stale = copy(seal)
        target = seal.folder / "hooks/log.sh"
        target.chmod(0o600)
        target.write_text(evil(outside))
        return stale

    monkeypatch.setattr(command_seal._Seal, "copy", tampered)
    started = race(monkeypatch, lambda: None)
    out = run(ws, hook)
    assert out.stop is not None and "hooks/log.sh changed" in out.stop
    assert started == [] and not (outside / "pwned").exists()
    assert list(temp.iterdir()) == []


# -- what the hook sees --------------------------------------------------------------------


def test_the_script_runs_from_a_private_copy_in_the_workspace(
        ws: Path, temp: Path) -> None:
    """``$0`` names the copy, in a folder only the user may enter, beside the copies of the
    hook's other files and links to the rest of its workspace folder; the working directory
    and ``$REIN_PROJECT_DIR`` are the workspace."""
    write(ws, "hooks/log.sh", 'cat > /dev/null\nhere=$(dirname "$0")\n'
          '{ echo "$0"; pwd; echo "$REIN_PROJECT_DIR"; stat -c %a "$here/.."; '
          'cat "$here/lib/common.sh"; readlink "$here/other.sh"; cat "$here/../data.txt"; '
          'ls "$here"; } > ran\n')
    write(ws, "hooks/lib/common.sh", "echo common\n")
    write(ws, "hooks/other.sh", "echo not bound\n")
    write(ws, "data.txt", "data beside the hooks\n")
    out = run(ws, trusted(ws, "sh hooks/log.sh", files=["hooks/lib"]))
    assert out.runs[0].status == "completed", out.runs[0].message
    script, cwd, project, mode, common, other, data, *listed = (
        ws / "ran").read_text().splitlines()
    folder = Path(script).parent.parent
    assert folder.parent == temp and folder.name.startswith(FOLDER_PREFIX)
    assert script == str(folder / "hooks/log.sh") and mode == "700"
    assert cwd == project == str(ws)
    assert common == "echo common"  # bound (files): the copy
    assert other == str(ws / "hooks/other.sh")  # not bound: the workspace's, as before
    assert data == "data beside the hooks"  # up from the script's folder: the workspace's
    assert listed == ["lib", "log.sh", "other.sh"]
    assert not folder.exists()


def test_a_module_beside_the_script_that_files_does_not_list_is_read_from_the_workspace(
        ws: Path, temp: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a script reaches from its own folder and trust did not bind is read from the
    workspace as before (a hook that imported a helper beside it still runs); only the
    bound files are copies."""
    write(ws, "hooks/check.py", "import sys, helper\nsys.stdin.read()\nhelper.main()\n")
    write(ws, "hooks/helper.py", "import os\n\ndef main():\n"
          "    open(os.environ['REIN_PROJECT_DIR'] + '/ran', 'w').write(\n"
          "        os.path.realpath(__file__))\n")
    out = run(ws, trusted(ws, [sys.executable, "hooks/check.py"]))
    assert out.runs[0].status == "completed", out.runs[0].message
    imported = Path((ws / "ran").read_text())  # the module's real path, while it ran
    assert imported == (ws / "hooks/helper.py").resolve()  # through its link
    assert list(temp.iterdir()) == []


def test_the_copy_keeps_the_scripts_modes(ws: Path, temp: Path) -> None:
    """Executable if the script is, read-only: a script that is not executable does not
    start as a program from its copy either."""
    write(ws, "hooks/x.sh", "#!/bin/sh\ncat > /dev/null\n")
    out = run(ws, trusted(ws, ["hooks/x.sh"]))
    assert out.runs[0].status == "failed" and out.runs[0].message.startswith("cannot start")
    assert list(temp.iterdir()) == []
    with sealed_command("sh hooks/x.sh", ws, pin(ws, ["hooks/x.sh"]),
                        search_path="/usr/bin") as sealed:
        assert sealed.folder is not None
        copy = Path(sealed.folder) / "hooks/x.sh"
        assert stat.S_IMODE(copy.stat().st_mode) == 0o400


# -- every way out removes the copies ------------------------------------------------------


def test_the_copies_are_removed_after_a_timeout_a_change_and_a_cancel(
        ws: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(ws, "hooks/slow.sh", "sleep 30\n")
    out = run(ws, trusted(ws, "sh hooks/slow.sh", timeout_seconds=0.2))
    assert out.runs[0].message == "timed out; its process group was killed"
    assert list(temp.iterdir()) == []

    hook = trusted(ws, "sh hooks/slow.sh")
    write(ws, "hooks/slow.sh", "sleep 31\n")
    assert run(ws, hook).stop is not None
    assert list(temp.iterdir()) == []

    write(ws, "hooks/slow.sh", "sleep 30\n")
    seen: list[list[Path]] = []

    def look() -> None:
        seen.append(list(temp.iterdir()))  # the copies are there while it runs

    async def cancelled() -> None:
        started = asyncio.Event()

        async def never(command: Any, **kw: Any) -> Any:
            look()
            started.set()
            await asyncio.Event().wait()

        monkeypatch.setattr(hooks_module, "run_process", never)
        runner = HookRunner([trusted(ws, "sh hooks/slow.sh")], cwd=ws, session_id="s")
        task = asyncio.ensure_future(runner.run("PreToolUse", CALL, tool="shell"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert len(seen) == 1 and len(seen[0]) == 1 and list(temp.iterdir()) == []


def test_a_hook_with_no_workspace_file_runs_as_written_with_no_copy(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_folder(*args: Any, **kw: Any) -> str:
        raise AssertionError("a folder was made for a hook with no workspace file")

    monkeypatch.setattr(tempfile, "mkdtemp", no_folder)
    started = race(monkeypatch, lambda: None)
    hook = trusted(ws, "cat > /dev/null", search_path="/usr/bin:/bin")
    assert dict(hook.files) == {}
    assert run(ws, hook).runs[0].status == "completed"
    assert started == ["cat > /dev/null"]


def test_a_workspace_file_the_line_names_that_trust_did_not_bind_stops_the_session(
        ws: Path, outside: Path, temp: Path) -> None:
    write(ws, "hooks/a.sh", APPROVED)
    write(ws, "hooks/b", evil(outside))
    hook = Hook(name="log", command="sh hooks/a.sh && sh hooks/b", events=("PreToolUse",),
                files=pin(ws, ["hooks/a.sh"]))  # hooks/b was a folder when it was read
    out = run(ws, hook)
    assert out.stop is not None and out.stop.startswith("hook log was not run: hooks/b ")
    assert not (outside / "pwned").exists() and not (ws / "ran").exists()


def test_a_watched_hook_named_by_a_workspace_path_starts_through_the_gate(
        ws: Path, temp: Path) -> None:
    """The gate checks that the program exists before it starts: the copy is named by its
    full path, so a script named from the workspace is found (it was looked for in rein's
    own working directory)."""
    write(ws, "hooks/log.sh", "#!/bin/sh\n" + APPROVED, executable=True)

    class Watch:
        def started(self, pgid: int) -> None: ...

        def ended(self, pgid: int) -> None: ...

    async def go() -> ChainOutcome:
        token = GROUP_WATCH.set(Watch())
        try:
            runner = HookRunner([trusted(ws, ["hooks/log.sh"])], cwd=ws, session_id="s")
            return await runner.run("PreToolUse", CALL, tool="shell")
        finally:
            GROUP_WATCH.reset(token)

    assert asyncio.run(go()).runs[0].status == "completed"
    assert (ws / "ran").read_text().endswith("approved\n")


# -- the rewritten command -----------------------------------------------------------------


@pytest.mark.parametrize(("command", "expected"), [
    ("sh hooks/a.sh x 'two words'", "/bin/sh {F}/hooks/a.sh x 'two words'"),
    ('sh "$CLAUDE_PROJECT_DIR"/hooks/a.sh 2>&1 | tee -a log # a comment',
     "/bin/sh {F}/hooks/a.sh 2>&1 | /bin/tee -a log # a comment"),
    ("X=1 sh hooks/a.sh --conf=hooks/in.txt < hooks/in.txt; echo done",
     ("X=1 /bin/sh {F}/hooks/a.sh --conf={F}/hooks/in.txt < {F}/hooks/in.txt; "
      "/bin/echo done")),
    ("bash -c 'sh hooks/a.sh' && hooks/a.sh\\\n  missing",
     "/bin/bash -c '/bin/sh {F}/hooks/a.sh' && {F}/hooks/a.sh  missing"),
    (["sh", "-c", "sh hooks/a.sh"], ("/bin/sh", "-c", "/bin/sh {F}/hooks/a.sh")),
    (["/bin/sh", "hooks/a.sh", "hooks"], ("/bin/sh", "{F}/hooks/a.sh", "hooks")),
])
def test_each_word_naming_a_bound_file_names_its_copy(
        ws: Path, temp: Path, command: str | list[str], expected: str | tuple[str, ...]
        ) -> None:
    """A program found on a PATH with a workspace directory runs by its full path, a path
    bound as absent (``missing``, ``log``) is left as written, a folder is data."""
    write(ws, "hooks/a.sh", APPROVED, executable=True)
    write(ws, "hooks/in.txt", "in\n")
    search_path = f"{ws / 'bin'}:/bin"
    found = command_files(command, ws, search_path=search_path)
    with sealed_command(command, ws, pin(ws, found.paths), search_path=search_path) as sealed:
        assert sealed.changed == ()
        folder = str(sealed.folder)
        if isinstance(expected, str):
            assert sealed.command == expected.format(F=folder)
        else:
            assert sealed.command == tuple(w.format(F=folder) for w in expected)


@pytest.mark.parametrize("line", [
    "a 'b c' \"d $X e\" f\\ g", "2>&1 x <in >>out", "a;b&&c||d|e&f", "x # c\ny",
    "a\\\nb c", "'' \"\" x", "a2>x", "\"2\">x",
])
def test_word_spans_find_the_words_the_splitter_finds(line: str) -> None:
    spans = word_spans(line)
    commands = split_commands(line)
    assert spans is not None and commands is not None
    assert len(spans) == sum(len(c.words) for c in commands)


def test_a_file_bound_by_its_full_path_outside_the_workspace_runs_from_its_copy(
        ws: Path, tmp_path: Path, outside: Path, temp: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What `rein eval` pins of a suite: ``{suite}/hooks/deny.py`` by its full path. Its
    copy goes under the folder (a copy "at" a full path would be the file itself), and the
    word naming it names the copy."""
    suite = tmp_path / "suite"
    write(suite, "hooks/log.sh", APPROVED)
    script = str(suite / "hooks" / "log.sh")
    hook = Hook(name="log", command=("sh", script), events=("PreToolUse",),
                files={script: pin(suite, ["hooks/log.sh"])["hooks/log.sh"]})
    started = race(monkeypatch, lambda: write(suite, "hooks/log.sh", evil(outside)))
    out = run(ws, hook)
    assert [(r.status, r.message) for r in out.runs] == [("completed", "")]
    assert not (outside / "pwned").exists()
    assert (ws / "ran").read_text().endswith("approved\n")
    [(program, copy)] = started
    assert program == "sh" and copy != script and copy.endswith(script)
    assert "/rein-outside/" in copy
    assert list(temp.iterdir()) == []
