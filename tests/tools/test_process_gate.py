"""A watched command runs only once its process group is on record.

If recording fails (or rein dies before it), the child finds its gate closed and exits
without running the command, so no group can run unrecorded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rein.tools.process import GROUP_WATCH, run_process


class Watch:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.started_groups: list[int] = []
        self.ended_groups: list[int] = []

    def started(self, pgid: int) -> None:
        if self.fail:
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


def test_when_recording_fails_the_command_never_runs(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="the store is gone"):
        _run(Watch(fail=True), "echo ran > marker", tmp_path)
    # Give a wrongly started command time to write; the gated child exits at once instead.
    asyncio.run(asyncio.sleep(0.3))
    assert not (tmp_path / "marker").exists()


def test_a_missing_program_is_still_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        _run(Watch(), ["no-such-program-for-rein"], tmp_path)
