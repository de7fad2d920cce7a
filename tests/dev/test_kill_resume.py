"""`rein submit` killed with SIGKILL while rein runs a feature's verify, then `rein dev`.

The verify command's whole process group (a grandchild included) is stopped when the flow
resumes, the answered attempt is replayed from its stored envelope (never asked again),
the verify runs again, and every feature is committed exactly once.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from devflow_support import Cli, alive, approve, drive
from scripted import PYTHON, ScriptedDriver, git, good_plan

# The verify of this test: the first run leaves a grandchild and hangs (rein is killed
# meanwhile); later runs are the real tests.
HANG_ONCE = """\
import os, pathlib, subprocess, sys, time
mark = pathlib.Path(os.environ["DEVFLOW_HANG_DIR"]) / "hung"
if not mark.exists():
    mark.write_text("1")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    (mark.parent / "pids.json").write_text(f"[{os.getpid()}, {child.pid}]")
    time.sleep(300)
sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *sys.argv[1:]]))
"""


def test_sigkill_mid_verify_then_resume(repo: Path, cli: Cli, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    hang = tmp_path / "hang"
    hang.mkdir()
    monkeypatch.setenv("DEVFLOW_HANG_DIR", str(hang))
    plan = good_plan()
    plan["features"][0]["verify"] = [PYTHON, "hang_once.py", "tests/test_c_to_f.py"]
    driver = ScriptedDriver(repo, cli, bad_plan_first=False, wrong_first=False, plan=plan)
    code, where = driver.dev()
    _code, pending = driver.submit(driver.work(where["instruction"]))
    assert pending.get("for") == "approval", pending
    approve(cli)
    code, where = driver.dev()
    instruction = where["instruction"]
    assert instruction["node"] == "feature_c_to_f"
    envelope = driver.work(instruction)
    driver.write("hang_once.py", HANG_ONCE)
    driver.write(".rein/inbox.json", json.dumps(envelope))

    rein = Path(sys.executable).parent / "rein"
    submit = subprocess.Popen([str(rein), "submit", "--json"], cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pids_file = hang / "pids.json"
    for _ in range(600):  # bounded: the verify announces itself once it runs
        if pids_file.exists() and pids_file.read_text():
            break
        if submit.poll() is not None:
            pytest.fail(f"submit ended first: {submit.communicate()}")
        time.sleep(0.1)
    pids = json.loads(pids_file.read_text())
    submit.send_signal(signal.SIGKILL)
    submit.communicate()
    assert all(alive(p) for p in pids)  # rein is gone; its verify group is left behind
    assert git(repo, "log", "--oneline", check=False) == ""

    code, where = driver.dev()
    assert any("resumed run" in n for n in where["notices"]), where
    assert not any(alive(p) for p in pids)  # the whole group was stopped
    # The killed attempt was replayed from its stored envelope: no second c_to_f turn.
    assert where["instruction"]["node"] == "feature_f_to_c", where
    code, where = drive(driver, cli)
    assert (code, where["reason"]) == (0, "done"), where
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert len(subjects) == 3 and len(set(subjects)) == 3
    assert [i["node"] for i in driver.seen].count("feature_c_to_f") == 1
    assert git(repo, "status", "--porcelain") == ""
