"""A watched command runs only once its process group is on record.

If recording fails (or rein dies before it), the child finds its gate closed and exits
without running the command, so no group can run unrecorded.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from rein.tools.process import GROUP_WATCH, run_process


class Watch:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.started_groups: list[int] = []
        self.ended_groups: list[int] = []
        self.seen_at_gate: bool | None = None

    def started(self, pgid: int) -> None:
        if self.fail:
            # Fail only once the child has settled: waiting at the gate, or (were the gate
            # open) already through the command, so that whatever it would write is written.
            self.seen_at_gate = _settle(pgid)
            raise RuntimeError("the store is gone")
        self.started_groups.append(pgid)

    def ended(self, pgid: int) -> None:
        self.ended_groups.append(pgid)


def _run(watch: Watch, command: str | list[str], cwd: Path):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        token = GROUP_WATCH.set(watch)
        try:
            return await run_process(command, cwd=cwd, env={"PATH": "/usr/bin:/bin"},
                                     timeout=30, grace_seconds=0.2)
        finally:
            GROUP_WATCH.reset(token)
    return asyncio.run(go())


def test_a_recorded_group_runs_normally_with_empty_stdin(tmp_path: Path) -> None:
    watch = Watch()
    result = _run(watch, "cat; echo ran > marker; echo done", tmp_path)
    assert (result.exit_code, result.stdout) == (0, "done\n")  # cat read /dev/null, not the gate
    assert (tmp_path / "marker").read_text() == "ran\n"
    assert len(watch.started_groups) == 1 and watch.ended_groups == watch.started_groups


def test_a_program_named_by_a_relative_path_is_found_from_the_commands_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Looked for from rein's own directory, it was missing and the watched run refused.
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "hello"
    script.write_text("#!/bin/sh\necho hello from $0\n")
    script.chmod(0o755)
    monkeypatch.chdir("/")
    watch = Watch()
    result = _run(watch, ["bin/hello"], tmp_path)
    assert (result.exit_code, result.stdout) == (0, "hello from bin/hello\n")
    assert len(watch.started_groups) == 1
    with pytest.raises(FileNotFoundError):
        _run(Watch(), ["bin/missing"], tmp_path)


def _settle(pid: int, looks: int = 2000) -> bool:
    """Whether the child ``pid`` is waiting at the gate (the gate's shell, asleep: its one
    blocking step is reading the go line); False once it is through or gone instead. Looks at
    /proc a bounded number of times."""
    proc = Path(f"/proc/{pid}")
    for _ in range(looks):
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return False  # gone (reaped)
        if state in ("Z", "X"):
            return False  # through whatever it ran, not reaped yet
        if state == "S" and b"rein-gate" in cmdline:
            return True
        time.sleep(0.005)  # one look; the bound is the count
    raise AssertionError(f"process {pid} neither waited at the gate nor ended")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_when_recording_fails_the_command_never_runs(tmp_path: Path) -> None:
    watch = Watch(fail=True)
    with pytest.raises(RuntimeError, match="the store is gone"):
        _run(watch, "echo ran > marker", tmp_path)
    # run_process stops the group before it raises: nothing of it can still write.
    assert watch.seen_at_gate is True
    assert not (tmp_path / "marker").exists()


def test_a_missing_program_is_still_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        _run(Watch(), ["no-such-program-for-rein"], tmp_path)
