"""Which program a feature's verify runs, said before the first feature and checked then.

A verify such as ``python -m pytest`` runs whatever ``python`` the PATH of the submitting
process finds (the agent's shell: a virtual environment it activated, or none). The feature
instructions name that program as found when the plan was checked, and the plan check runs
the same lookup, so that a verify that cannot start, or an interpreter that lacks the module
it runs, is told to the agent at the plan, not as a failed attempt of the first feature.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

# Asks the interpreter itself: the module is importable there, without importing it.
_FIND = "import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)"


def found(program: str, cwd: Path) -> Path | None:
    """Where ``program`` is: a path as written (relative to ``cwd``), else on PATH."""
    if "/" in program:
        path = Path(program) if Path(program).is_absolute() else cwd / program
        return path if path.is_file() and os.access(path, os.X_OK) else None
    hit = shutil.which(program)
    return Path(hit) if hit else None


def shown(argv: Sequence[str], cwd: Path) -> str:
    """How the instruction names the program: ``python`` is /usr/bin/python3, found on
    PATH when the plan was checked."""
    program = argv[0]
    if "/" in program:
        return f"`{program}` runs as written"
    path = found(program, cwd)
    return (f"`{program}` is {path}, found on PATH when the plan was checked" if path else
            f"`{program}` was not on PATH when the plan was checked")


def problem(argv: Sequence[str], cwd: Path) -> str | None:
    """Why the verify ``argv`` cannot pass in ``cwd`` whatever the feature does (its
    program is missing, or the interpreter of ``python -m MODULE`` lacks the module), or
    None."""
    program = argv[0]
    path = found(program, cwd)
    command = shlex.join(argv)
    if path is None:
        where = "as written" if "/" in program else "on PATH"
        return (f"the verify `{command}` cannot start: `{program}` is not found {where}; "
                "name a program that exists here, or run `rein submit` from the environment "
                "that has it")
    module = argv[2] if len(argv) > 2 and argv[1] == "-m" else None
    if module is None or not path.name.startswith("python"):
        return None
    try:
        done = subprocess.run([str(path), "-c", _FIND, module], cwd=cwd, capture_output=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the verify `{command}` cannot start: {path}: {exc}"
    if done.returncode == 0:
        return None
    return (f"the verify `{command}` would fail every feature: {path} (the `{program}` "
            f"{'as written' if '/' in program else 'on PATH'}) cannot import {module}; "
            f"install {module} for that interpreter, or name one that has it in the verify "
            f"(for example .venv/bin/python -m {module})")


__all__ = ["found", "problem", "shown"]
