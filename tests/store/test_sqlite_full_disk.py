"""A real full disk (ENOSPC on a small tmpfs): ``rein run`` says the disk is full, not that
the store is damaged, and once there is room again every committed run is still there;
any other write that does not fit is DISK_FULL, not a path problem.

The tmpfs is mounted in a private mount namespace (``unshare -rm``), so nothing outside the
test sees it and nothing is left mounted whatever happens; where mounting is not allowed
the test skips and says why (tests/store/test_sqlite_damage.py covers SQLITE_FULL there).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import EXAMPLES

INNER = r'''
import contextlib, io, json, os, shutil, sys
from pathlib import Path

from rein.cli import main

disk, graph = Path(sys.argv[1]), Path(sys.argv[2])
ws = disk / "ws"
ws.mkdir()
shutil.copy(graph, ws / graph.name)
os.chdir(ws)


def rein(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return {"code": code, "out": out.getvalue(), "err": err.getvalue()}


digest = rein("graph", "digest", graph.name)["out"].strip()
first = rein("run", graph.name, "--approve", digest, "--json")
fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
with contextlib.suppress(OSError):  # ENOSPC: the disk is full
    while True:
        os.write(fd, b"\0" * 65536)
os.close(fd)
full = rein("run", graph.name, "--approve", digest, "--json")
init = rein("init", "--agent", "claude", "--json")  # a plain file write, outside the store
os.unlink(disk / "filler")
after = rein("runs", "list", "--json")
print(json.dumps({"first": first, "full": full, "init": init, "after": after}))
'''


def test_a_full_disk_is_reported_as_full_and_loses_no_run(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a private tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    script = tmp_path / "inner.py"
    script.write_text(INNER)
    graph = EXAMPLES / "no-worker.agraph.yaml"
    probe = subprocess.run(["unshare", "-rm", "mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs",
                            str(disk)], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.strip() or probe.returncode}")
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c",
         'mount -t tmpfs -o size=8m tmpfs "$1" && exec "$2" "$3" "$1" "$4"', "sh", str(disk),
         sys.executable, str(script), str(graph)],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["first"]["code"] == 0, result["first"]
    full = result["full"]
    assert full["code"] == 1
    assert "Traceback" not in full["err"]
    error = json.loads(full["out"])["error"]
    assert error["code"] == "STORE_FULL"
    assert "is full" in error["message"]
    assert "move .rein/ aside" not in error["hint"]
    init = json.loads(result["init"]["out"])["error"]
    assert (result["init"]["code"], init["code"]) == (1, "DISK_FULL")
    assert init["hint"] == "free some space on the disk and run the command again"
    listed = json.loads(result["after"]["out"])["runs"]
    assert [run["status"] for run in listed] == ["succeeded"]
