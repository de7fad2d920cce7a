"""The console script ends the process as Python's exit would, without the teardown
(rein.cli.leave): the exit code, the atexit callbacks and the flushed output stay, the
freeing of every module and object goes; a thread still running, or a tracer, keeps
Python's exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# A program that runs the console script's entry with an atexit callback and an object
# whose finalizer speaks only during the interpreter's teardown.
PROGRAM = textwrap.dedent("""
    import atexit, os, sys, threading, time

    class Torn:
        def __del__(self, write=os.write):  # os.write kept: modules are being cleared
            write(1, b"torn down\\n")

    KEPT = Torn()  # freed only when the interpreter tears its modules down
    atexit.register(lambda: print("atexit ran"))  # not flushed: the exit must flush it
    if "thread" in sys.argv:
        def late():
            time.sleep(0.3)
            print("thread done", flush=True)
        threading.Thread(target=late).start()
    if "trace" in sys.argv:
        sys.settrace(lambda *args: None)
    from rein.cli import run
    sys.argv = ["rein", *[a for a in sys.argv[1:] if a not in ("thread", "trace")]]
    run()
""")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
    return subprocess.run([sys.executable, "-c", PROGRAM, *args], capture_output=True,
                          text=True, timeout=60, env=env, check=False)


def test_the_process_ends_without_tearing_the_interpreter_down() -> None:
    done = _run("--version")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("rein "), done.stdout
    assert "atexit ran" in lines  # the callbacks ran and their output was flushed
    assert "torn down" not in lines  # the teardown was skipped


@pytest.mark.parametrize(("args", "code"), [
    (("graph", "validate", "no-such-graph.agraph.yaml"), 1),  # ExitCode.FAILURE
    (("graph", "nonsense"), 64),  # ExitCode.USAGE
])
def test_the_exit_code_is_the_commands(args: tuple[str, ...], code: int) -> None:
    from rein.cli import main

    assert main(list(args)) == code  # what the command returns, in process
    done = _run(*args)
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "atexit ran" in done.stdout.splitlines()


@pytest.mark.parametrize("why", ["thread", "trace"])
def test_a_running_thread_or_a_tracer_keeps_pythons_exit(why: str) -> None:
    done = _run("--version", why)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "atexit ran" in lines
    assert "torn down" in lines  # Python's own exit, teardown and all
    if why == "thread":
        assert "thread done" in lines  # waited for, as Python's exit waits for it



def test_a_reader_gone_before_a_command_prints_is_not_an_error(tmp_path: Path) -> None:
    """`rein runs list | head -0`: the output stops, the command exits 0 (click's own
    handling would make it 1), with nothing on standard error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
    read, write = os.pipe()
    os.close(read)  # gone before anything is written: the first write fails (EPIPE)
    try:
        done = subprocess.run([sys.executable, "-c", "from rein.cli import run; run()",
                               "runs", "list", "--json"], cwd=tmp_path, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=60, env=env,
                              check=False)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, "")
