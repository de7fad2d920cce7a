"""`rein submit` killed with SIGKILL while rein checks a document, then `rein spec`.

The check reads the published plan for the ids that must stay stable; the test puts a named
pipe at its path (before the instruction, so the pipe is part of the workspace the driver
was given), so rein's check blocks reading it, deterministically, while the test kills the
process; then the pipe is removed (nothing was published yet). The answered attempt
is replayed from its stored envelope (the driver is not asked again), the check runs again,
and the flow goes on to READY.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from devflow_support import Cli
from spec_driver import SpecDriver, drive, protocol_errors

from rein.spec.paths import PLAN_PATH


def test_sigkill_mid_check_then_resume(repo: Path, cli: Cli,
                                       person: Callable[[str], str]) -> None:
    driver = SpecDriver(repo, cli)
    _code, where = driver.flow("spec")
    _code, pending = driver.submit(driver.work(where["instruction"]))
    assert pending.get("for") == "approval", pending
    document = repo / PLAN_PATH
    os.mkfifo(document)
    person(where["run_id"])
    _code, where = driver.flow("spec")
    instruction = where["instruction"]
    assert instruction["node"] == "write_requirements"
    envelope = driver.work(instruction)
    (repo / ".rein/inbox.json").write_text(json.dumps(envelope))

    rein = Path(sys.executable).parent / "rein"
    submit = subprocess.Popen([str(rein), "submit", "--json"], cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    writer = None
    for _ in range(600):  # bounded: rein opens the pipe when it checks the document
        try:
            writer = os.open(document, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader has it open yet
                raise
        if submit.poll() is not None:
            pytest.fail(f"submit ended first: {submit.communicate()}")
        time.sleep(0.05)
    assert writer is not None, "rein never opened the document"
    submit.send_signal(signal.SIGKILL)
    submit.communicate()
    os.close(writer)
    document.unlink()

    code, where = driver.flow("spec")
    assert any(n.startswith("resumed run ") for n in where["notices"]), where
    assert code == 3 and where["instruction"].get("for") == "approval", where
    assert [d["status"] for d in where["documents"][:2]] == ["approved", "accepted"]
    code, where = drive(driver, person)
    assert (code, where["reason"]) == (0, "ready"), where
    # The killed attempt was replayed from its stored envelope: write_requirements once.
    assert [i["node"] for i in driver.seen].count("write_requirements") == 1
    assert protocol_errors(cli, json.loads((repo / ".rein/spec/flow.json").read_text())[
        "runs"]) == 0
