"""The process-group runner: exit codes, bounded output, and no survivors."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from rein.tools.process import ProcessResult, run_process

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

ENV = {"PATH": os.environ.get("PATH", os.defpath)}


def _state(pid: int) -> str | None:
    """The process state letter, or None when the process is gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return data[data.rindex(")") + 2 :].split()[0]


def _alive(pid: int) -> bool:
    # A zombie is dead; it only waits for a parent (here possibly an init that never reaps).
    return _state(pid) not in (None, "Z")


def _live_group_members(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            data = stat.read_text()
        except OSError:
            continue
        fields = data[data.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def run(command, tmp_path: Path, **kw) -> ProcessResult:
    kw.setdefault("timeout", 30)
    kw.setdefault("env", ENV)
    return asyncio.run(run_process(command, cwd=tmp_path, **kw))


def test_exit_code_and_both_streams(tmp_path):
    result = run("echo out; echo err >&2; exit 4", tmp_path)
    assert (result.exit_code, result.stdout, result.stderr) == (4, "out\n", "err\n")
    assert not result.timed_out and not result.truncated
    assert result.stdout_bytes == 4 and result.duration_seconds >= 0


def test_argument_list_is_not_a_shell(tmp_path):
    result = run([sys.executable, "-c", "import sys; print(sys.argv[1])", "$HOME; echo no"], tmp_path)
    assert result.stdout == "$HOME; echo no\n"


def test_cwd_and_exact_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("REIN_TEST_LEAK", "host")
    result = run('pwd; echo "${REIN_TEST_LEAK:-clean} $ONLY"', tmp_path, env={**ENV, "ONLY": "mine"})
    assert result.stdout == f"{tmp_path}\nclean mine\n"


def test_missing_program_raises_for_an_argument_list(tmp_path):
    with pytest.raises(FileNotFoundError):
        run(["definitely-not-a-program-xyz"], tmp_path)


def test_empty_argument_list_is_refused(tmp_path):
    with pytest.raises(ValueError):
        run([], tmp_path)


def test_killed_by_signal_reports_minus_signum(tmp_path):
    assert run("kill -9 $$", tmp_path).exit_code == -9


def test_timeout_kills_the_whole_group_including_grandchildren(tmp_path):
    result = run("echo $$ $!; sleep 60 & echo $$ $!; sleep 60", tmp_path, timeout=0.5, grace_seconds=0.5)
    assert result.timed_out
    leader, grandchild = (int(p) for p in result.stdout.split()[-2:])
    assert not _alive(leader)
    assert not _alive(grandchild)
    assert _live_group_members(leader) == []
    assert result.duration_seconds < 10


def test_a_grandchild_ignoring_sigterm_gets_sigkill(tmp_path):
    script = "sh -c 'trap \"\" TERM; echo $$; exec sleep 60' & sleep 60"
    result = run(script, tmp_path, timeout=0.5, grace_seconds=0.2)
    assert result.timed_out
    stubborn = int(result.stdout.split()[0])
    assert not _alive(stubborn)
    assert _live_group_members(stubborn) == []


def test_cancellation_kills_the_whole_group(tmp_path):
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)

    def read_pids() -> list[int]:
        with open(fifo) as handle:  # blocks until the child has written: no polling
            return [int(p) for p in handle.read().split()]

    async def scenario() -> list[int]:
        task = asyncio.ensure_future(
            run_process(
                f"sleep 60 & echo $$ $! > {fifo}; wait",
                cwd=tmp_path,
                env=ENV,
                timeout=None,
                grace_seconds=0.5,
            )
        )
        pids = await asyncio.get_running_loop().run_in_executor(None, read_pids)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pids

    leader, grandchild = asyncio.run(scenario())
    assert not _alive(leader)
    assert not _alive(grandchild)
    assert _live_group_members(leader) == []


def _alive_with_argument(marker: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        pid = int(cmdline.parent.name)
        if marker.encode() in args and _alive(pid):
            found.append(pid)
    return found


@pytest.mark.parametrize("ticks", range(0, 12, 2))
def test_cancellation_at_any_early_point_leaves_no_survivor(tmp_path, ticks):
    # A sleep length unique to this test finds its processes without knowing their pids.
    marker = f"61.{os.getpid()}{ticks}"

    async def scenario() -> None:
        task = asyncio.ensure_future(
            run_process(
                f"sleep {marker} & sleep {marker}", cwd=tmp_path, env=ENV, timeout=None,
                grace_seconds=0.5,
            )
        )
        for _ in range(ticks):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 20)

    asyncio.run(scenario())
    assert _alive_with_argument(marker) == []


def test_background_leftovers_are_killed_and_do_not_hold_the_pipes(tmp_path):
    result = run("sleep 60 & echo $!", tmp_path, timeout=30)
    # Waiting for the sleeper's pipe would have run into the 30 s timeout: not timed out
    # means it did not wait, without asserting on the clock.
    assert not result.timed_out
    assert result.exit_code == 0
    assert not _alive(int(result.stdout))


def test_output_is_bounded_head_and_tail_kept(tmp_path):
    code = "import sys; sys.stdout.write('HEAD' + 'x' * 200000 + 'TAIL'); sys.stdout.flush()"
    result = run([sys.executable, "-c", code], tmp_path, max_output_bytes=1000)
    assert result.truncated
    assert result.stdout_bytes == 200008
    assert result.stdout.startswith("HEAD")
    assert result.stdout.endswith("TAIL")
    assert "[199008 bytes omitted]" in result.stdout
    assert len(result.stdout) < 1100


def test_large_output_on_both_streams_does_not_deadlock(tmp_path):
    # Far beyond a pipe buffer on each stream, interleaved: a sequential reader would hang.
    code = (
        "import sys\n"
        "for i in range(2000):\n"
        "    sys.stdout.write('o' * 1000 + '\\n'); sys.stderr.write('e' * 1000 + '\\n')\n"
    )
    result = run([sys.executable, "-c", code], tmp_path, timeout=60, max_output_bytes=5_000_000)
    assert result.exit_code == 0 and not result.truncated
    assert result.stdout_bytes == result.stderr_bytes == 2000 * 1001


def test_undecodable_bytes_are_replaced(tmp_path):
    result = run("printf '\\377ok'", tmp_path)
    assert result.stdout == "\ufffdok"


def test_sandbox_prepare_rewrites_command_and_env(tmp_path):
    class Wrapping:
        """A test double sandbox that runs the command through env(1) with one variable."""

        def prepare(self, argv, *, cwd, env):
            return ["env", "WRAPPED=1", *argv], dict(env)

    result = run('echo "$WRAPPED"', tmp_path, sandbox=Wrapping())
    assert result.stdout == "1\n"
