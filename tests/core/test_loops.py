"""rein's event loops keep waking up inside a sandbox that denies sending on sockets.

asyncio wakes a sleeping loop from another thread by sending a byte on a socket pair; the
Codex CLI's sandbox denies ``sendto``, asyncio swallows the EPERM, and the loop sleeps for
ever (a ``rein submit`` hung after its criterion's process exited). Each test runs a child
under the same seccomp filter (tests/confine.py); the subprocess timeout is only a guard
against a hang.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from confine import SUPPORTED, prelude

from rein.core.loops import run

pytestmark = pytest.mark.skipif(not SUPPORTED, reason="the seccomp filter is written for "
                                "Linux on x86_64 and aarch64")

GUARD = 60  # seconds: a child that has not answered by then hangs


def _confined(code: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-c", prelude() + code], capture_output=True,
                              text=True, timeout=GUARD, check=False)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the confined child hung: {exc.stdout!r} {exc.stderr!r}") from exc


def test_the_filter_denies_sending_on_a_socket_as_the_codex_sandbox_does() -> None:
    done = _confined("import socket\na, b = socket.socketpair()\n"
                     "try:\n    a.send(b'x')\nexcept PermissionError:\n    print('denied')\n")
    assert done.stdout.strip() == "denied", done.stderr


def test_a_loop_waiting_on_a_thread_is_woken_by_it() -> None:
    # The loop has nothing to do but wait for the thread: only the cross-thread wake-up
    # can end the wait. With asyncio's own loop this child never returns.
    done = _confined(
        "import asyncio, time\nfrom rein.core.loops import run\n"
        "async def main():\n"
        "    loop = asyncio.get_running_loop()\n"
        "    for _ in range(3):\n"
        "        await loop.run_in_executor(None, time.sleep, 0.2)\n"
        "    return 'woke'\n"
        "print(run(main()))\n")
    assert done.returncode == 0 and done.stdout.strip() == "woke", done.stderr


def test_child_processes_are_seen_to_exit() -> None:
    # A child's exit is noticed by a thread of asyncio's child watcher, which then wakes
    # the loop: lost, run_process waited for ever about half the time.
    done = _confined(
        "from pathlib import Path\nfrom rein.core.loops import run\n"
        "from rein.tools.process import run_process\n"
        "async def main():\n"
        "    codes = []\n"
        "    for _ in range(20):\n"
        "        r = await run_process(['true'], cwd=Path('.'), env={'PATH': '/usr/bin:/bin'},\n"
        "                              timeout=None)\n"
        "        codes.append(r.exit_code)\n"
        "    return codes\n"
        "print(run(main()))\n")
    assert done.returncode == 0 and done.stdout.strip() == str([0] * 20), done.stderr


class Shown:
    """A result that counts how often it is written out (``repr``)."""

    def __init__(self) -> None:
        self.shown = 0

    def __repr__(self) -> str:
        self.shown += 1
        return "Shown()"


def test_a_result_is_handed_back_without_being_written_out() -> None:
    # asyncio's runner builds the repr of its SIGINT handler as it ends, and that handler
    # holds the main task: a result the task held was written out in full, a prepared
    # graph of 100,000 nodes included, on every call.
    result = Shown()

    async def call() -> Shown:
        return result

    assert run(call()) is result
    assert result.shown == 0
