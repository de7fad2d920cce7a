"""Running a feature's verify (or smoke) command as rein does: no shell, in the target
directory, its process group killed at the timeout; a failure said by its relevant lines."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from rein.tools.process import run_process

__all__ = ["relevant_lines", "run_command"]

_RELEVANT = re.compile(r"FAIL|Error|error:|assert|Traceback|^E\s|^>\s|not ok|panic", re.MULTILINE)
MAX_FEEDBACK_LINES = 20


async def run_command(argv: list[str], cwd: Path, timeout: float) -> str | None:
    """None when the command passes; else why it failed, with the relevant lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REIN_SECRET_",
                                                                     "GIT_"))}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider"})
    try:
        done = await run_process(argv, cwd=cwd, env=env, timeout=timeout,
                                 max_output_bytes=200_000)
    except OSError as exc:
        return f"`{shlex.join(argv)}` could not be started in {cwd}: {exc}"
    if done.timed_out:
        return (f"`{shlex.join(argv)}` took longer than {timeout:g} s; its process group "
                "was killed")
    if done.exit_code == 0:
        return None
    return (f"`{shlex.join(argv)}` exited {done.exit_code}:\n"
            + relevant_lines(done.stdout + "\n" + done.stderr))


def relevant_lines(output: str) -> str:
    """The lines that say what failed (FAILED ..., assert ..., error: ...) and the last
    line, not the first line of output (pytest's first line is its progress dots)."""
    lines = [ln.rstrip() for ln in output.splitlines() if ln.strip()]
    picked = [ln for ln in lines if _RELEVANT.search(ln)][-MAX_FEEDBACK_LINES:]
    if lines and (not picked or picked[-1] != lines[-1]):
        picked.append(lines[-1])
    return "\n".join(f"  {ln[:300]}" for ln in picked) or "  (no output)"
