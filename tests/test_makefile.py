"""`make run` installs what running needs and no test extras, and says what it is doing;
`make test` installs the test extras. Checked with `make -n` on a copy, so nothing runs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _planned(tmp_path: Path, target: str) -> list[str]:
    """The commands ``make TARGET`` would run in a fresh clone (no .venv yet)."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copyfile(ROOT / name, tmp_path / name)
    # Under `make test` the suite runs inside make: a nested make would print its
    # directory and inherit the outer flags, so it gets neither.
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    done = subprocess.run(["make", "--no-print-directory", "-n", target, "PYTHON=python3"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
                          check=True)
    return done.stdout.splitlines()


def test_make_run_installs_only_what_running_needs(tmp_path: Path) -> None:
    lines = _planned(tmp_path, "run")
    installs = [ln for ln in lines if " -m pip install " in ln and "--upgrade pip" not in ln]
    assert installs == [".venv/bin/python -m pip install --progress-bar off -e ."]
    assert not any("[test]" in ln for ln in lines)
    assert not any("--quiet" in ln for ln in installs)  # pip shows each package it fetches
    said = [ln for ln in lines if ln.startswith("echo \"== ")]
    assert said == ['echo "== creating .venv with python3"', 'echo "== upgrading pip"',
                    'echo "== installing rein and what it needs to run"']
    assert lines[-1] == "bash scripts/demo.sh"


def test_make_test_installs_the_test_extras(tmp_path: Path) -> None:
    lines = _planned(tmp_path, "test")
    assert ".venv/bin/python -m pip install --progress-bar off -e '.[test]'" in lines
