"""The verify runs the program the submitting PATH finds: the feature instructions name it,
and the plan check refuses a verify that cannot pass whatever a feature does (its program is
missing, or the interpreter lacks the module it runs) before the first feature, not as a
failed attempt of it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from devflow_support import Cli
from scripted import ScriptedDriver

from rein.dev.interpreter import problem, shown


def _plan_feedback(driver: ScriptedDriver) -> str:
    """Drive the planning turns to their end; the evidence the last retry was told."""
    driver.bad_plan_first = False
    _code, where = driver.dev()
    pending = where["instruction"]
    for _ in range(8):
        if pending.get("status") != "instruction":
            break
        _code, pending = driver.submit(driver.work(pending))
    assert pending.get("status") != "instruction"
    assert {i["node"] for i in driver.seen} == {"plan"}, "a feature was handed out"
    return str(driver.seen[-1]["feedback"]["failed_criteria"][0]["evidence"])


def test_an_interpreter_without_the_verify_module_refuses_the_plan(
        driver: ScriptedDriver, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REIN_DEV_VERIFY", f"{sys.executable} -m no_such_module_for_rein")
    evidence = _plan_feedback(driver)
    assert f"{sys.executable} (the `{sys.executable}` as written) cannot import " \
        "no_such_module_for_rein" in evidence


def test_a_verify_program_not_on_path_refuses_the_plan(
        driver: ScriptedDriver, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REIN_DEV_VERIFY", "no-such-verifier-for-rein --all")
    evidence = _plan_feedback(driver)
    assert "`no-such-verifier-for-rein` is not found on PATH" in evidence


def test_the_instruction_names_the_program_found_on_path(tmp_path: Path) -> None:
    python = Path(sys.executable)
    assert shown([sys.executable, "-m", "pytest"], tmp_path) == f"`{python}` runs as written"
    sh = shutil.which("sh")
    assert sh is not None
    assert shown(["sh", "x.sh"], tmp_path) == \
        f"`sh` is {sh}, found on PATH when the plan was checked"
    assert shown(["no-such-verifier-for-rein"], tmp_path) == \
        "`no-such-verifier-for-rein` was not on PATH when the plan was checked"
    assert problem([sys.executable, "-m", "pytest"], tmp_path) is None
