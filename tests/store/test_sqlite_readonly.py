"""A store rein may not write: ``.rein/`` on a read-only mount, or a directory and files
whose permissions forbid writing. The reading commands work; the writing ones say
STORE_READONLY, and nothing is written beside the store.

The mount is a real read-only bind mount in a private mount namespace (``unshare -rm``),
so nothing outside the test sees it and nothing stays mounted whatever happens. Without
CAP_DAC_OVERRIDE dropped, root writes through any permission bits, so as root the
permissions case runs the commands with that capability taken out of the bounding set
(``setpriv``). Where either is not possible the test skips and says why.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES

from rein.cli import main

GATE = """\
ags_version: "1.0"
kind: AgenticGraph
id: tests/gate
title: One approval gate
objective: Wait for a person.
requires_conformance: 3
entrypoints: [ask]
nodes:
  ask:
    type: gate
    title: Ask
    description: Ask a person to approve.
    gate:
      mode: approve
      prompt: "Go ahead?"
      timeout_seconds: 60
      on_timeout: fail
"""

INNER = r'''
import contextlib, io, json, os, sys
from rein.cli import main

os.chdir(sys.argv[1])
run_id, approval = sys.argv[2], sys.argv[3]  # sys.argv[4]: the run waiting at the gate


def rein(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return {"code": code, "out": out.getvalue(), "err": err.getvalue()}


digest = rein("graph", "digest", "no-worker.agraph.yaml")["out"].strip()
print(json.dumps({
    "list": rein("runs", "list", "--json"),
    "show": rein("runs", "show", run_id, "--json"),
    "record": rein("runs", "record", run_id),
    "events": rein("runs", "events", run_id, "--json"),
    "approvals": rein("approvals", "list", "--json"),
    "run": rein("run", "no-worker.agraph.yaml", "--approve", digest, "--json"),
    "cancel": rein("runs", "cancel", run_id, "--json"),
    "resume": rein("resume", sys.argv[4], "--json"),
    "accept": rein("approvals", "accept", approval, "--json"),
}))
'''


def rein(*args: str) -> tuple[int, dict[str, Any]]:
    """Run one command in this process (the workspace is the current directory)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*args, "--json"])
    return code, last_json(out.getvalue())


def last_json(text: str) -> Any:
    """What a ``--json`` command printed: one object, or JSON lines ending with one."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(text.strip().splitlines()[-1])


def workspace_with_runs(ws: Path, monkeypatch: Any) -> tuple[str, str, str]:
    """A finished run and a run waiting at an approval gate; their ids and the approval's."""
    ws.mkdir()
    shutil.copy(EXAMPLES / "no-worker.agraph.yaml", ws)
    (ws / "gate.agraph.yaml").write_text(GATE)
    monkeypatch.chdir(ws)
    runs = []
    for graph in ("no-worker.agraph.yaml", "gate.agraph.yaml"):
        digest = main_out("graph", "digest", graph)
        code, ended = rein("run", graph, "--approve", digest)
        assert code in (0, 3), ended
        runs.append(ended["run_id"])
    code, listed = rein("approvals", "list")
    assert code == 0
    (approval,) = listed["approvals"]
    # The gate's timeout has passed (asked long ago): looking at the queue applies it,
    # where the store can be written.
    db = sqlite3.connect(ws / ".rein" / "rein.db")
    try:
        with db:
            db.execute("UPDATE approvals SET created_at = '2000' || substr(created_at, 5)")
    finally:
        db.close()
    return runs[0], runs[1], approval["approval_id"]


def main_out(*args: str) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(args)) == 0
    return out.getvalue().strip()


def files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def check(result: dict[str, Any], done: str, waiting: str, approval: str) -> None:
    for name in ("list", "show", "record", "events", "approvals"):
        got = result[name]
        assert got["code"] == 0, (name, got)
        assert "Traceback" not in got["err"], (name, got["err"])
    listed = last_json(result["list"]["out"])["runs"]
    assert {r["run_id"]: r["status"] for r in listed} == {done: "succeeded",
                                                          waiting: "awaiting_human"}
    assert last_json(result["show"]["out"])["run_id"] == done
    record = last_json(result["record"]["out"])
    assert record["status"] == "succeeded"
    events = [json.loads(line) for line in result["events"]["out"].splitlines()]
    assert events[0]["type"] == "run/started"
    assert "run/finished" in {e.get("type") for e in events}
    # Due, but read-only: listed as it is, its timeout applied where it can be written.
    queue = last_json(result["approvals"]["out"])
    assert [a["approval_id"] for a in queue["approvals"]] == [approval]
    assert queue["timed_out"] == []
    for name in ("run", "cancel", "resume", "accept"):
        got = result[name]
        assert got["code"] == 1, (name, got)
        assert "Traceback" not in got["err"], (name, got["err"])
        error = last_json(got["out"])["error"]
        assert error["code"] == "STORE_READONLY", (name, error)
        assert "reading commands" in error["hint"], error


def run_inner(tmp_path: Path, argv: list[str]) -> dict[str, Any]:
    script = tmp_path / "inner.py"
    script.write_text(INNER)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_store_on_a_read_only_mount_is_read_and_not_written(tmp_path: Path,
                                                               monkeypatch: Any) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) for a private read-only mount")
    ws = tmp_path / "ws"
    done, waiting, approval = workspace_with_runs(ws, monkeypatch)
    state = ws / ".rein"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c",
                            'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1"', "sh",
                            str(state)], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a read-only mount here: {probe.stderr.strip()}")
    before = files(state)
    result = run_inner(tmp_path, [
        "unshare", "-rm", "sh", "-c",
        'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"',
        "sh", str(state), sys.executable, str(tmp_path / "inner.py"), str(ws), done,
        approval, waiting])
    check(result, done, waiting, approval)
    assert files(state) == before


def _read_only(folder: Path) -> None:
    for p in [folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _writable(folder: Path) -> None:
    for p in [folder, *folder.rglob("*")]:
        p.chmod(stat.S_IMODE(p.stat().st_mode) | stat.S_IWUSR)


def list_runs(tmp_path: Path, ws: Path, prefix: list[str]) -> subprocess.CompletedProcess[str]:
    """``rein runs list --json`` in ``ws``, in a process run with ``prefix``."""
    script = tmp_path / "list.py"
    script.write_text("import os, sys\nfrom rein.cli import main\nos.chdir(sys.argv[1])\n"
                      "sys.exit(main(['runs', 'list', '--json']))\n")
    return subprocess.run([*prefix, sys.executable, str(script), str(ws)],
                          capture_output=True, text=True, check=False)


def _unprivileged() -> list[str]:
    """How to run a command that the permission bits bind (root bypasses them)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("as root, needs setpriv(1) to drop CAP_DAC_OVERRIDE")
    return ["setpriv", "--bounding-set", "-dac_override"]


def test_a_store_rein_may_not_write_is_read_and_not_written(tmp_path: Path,
                                                            monkeypatch: Any) -> None:
    prefix = _unprivileged()
    ws = tmp_path / "ws"
    done, waiting, approval = workspace_with_runs(ws, monkeypatch)
    state = ws / ".rein"
    _read_only(state)
    try:
        before = files(state)
        result = run_inner(tmp_path, [*prefix, sys.executable, str(tmp_path / "inner.py"),
                                      str(ws), done, approval, waiting])
        after = files(state)
    finally:
        _writable(state)
    check(result, done, waiting, approval)
    assert after == before


def test_uncheckpointed_commits_that_cannot_be_read_are_not_hidden(tmp_path: Path,
                                                                   monkeypatch: Any) -> None:
    # A WAL with commits in it but no -shm beside it (a crash, then the -shm lost or not
    # copied) cannot be read without creating the -shm. Reading the file alone would show
    # the runs as they were before those commits: the command refuses instead.
    prefix = _unprivileged()
    ws = tmp_path / "ws"
    ws.mkdir()
    state = ws / ".rein"
    state.mkdir()
    child = subprocess.run([sys.executable, "-c", _CRASH, str(state / "rein.db")],
                           capture_output=True, text=True, check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr
    (state / "rein.db-shm").unlink()
    assert (state / "rein.db-wal").stat().st_size > 0
    _read_only(state)
    try:
        done = list_runs(tmp_path, ws, prefix)
    finally:
        _writable(state)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "STORE_READONLY"
    assert "rein.db-wal" in error["message"]


# A store with one run whose last commit is only in the WAL, left by a process killed
# before it closed (so the WAL and the -shm stay beside the file).
_CRASH = r'''
import os, signal, sys
from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.store.base import RunRow
from rein.store.sqlite import SQLiteStore

store = SQLiteStore(sys.argv[1])
store.create_run(RunRow(run_id=RunId("run-1"), graph_id="g", graph_path="g.agraph.yaml",
                        graph_digest="sha256-x=", status=RunStatus.RUNNING,
                        started_at="2026-01-01T00:00:00Z"), event_type="run/started",
                 payload={})
os.kill(os.getpid(), signal.SIGKILL)
'''


def test_a_crashed_store_on_a_read_only_location_is_read_with_its_wal(
        tmp_path: Path) -> None:
    # The WAL and its -shm both there (a writer was killed): SQLite reads them without
    # writing, so the run committed only to the WAL is listed.
    prefix = _unprivileged()
    ws = tmp_path / "ws"
    state = ws / ".rein"
    state.mkdir(parents=True)
    child = subprocess.run([sys.executable, "-c", _CRASH, str(state / "rein.db")],
                           capture_output=True, text=True, check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert (state / "rein.db-shm").exists()
    db = sqlite3.connect(f"file:{state / 'rein.db'}?immutable=1", uri=True)
    try:
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0  # the file alone
    finally:
        db.close()
    _read_only(state)
    try:
        done = list_runs(tmp_path, ws, prefix)
    finally:
        _writable(state)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["run_id"] for r in json.loads(done.stdout)["runs"]] == ["run-1"]


def test_a_store_too_old_to_read_without_upgrading_says_so(tmp_path: Path) -> None:
    # Opening a store of an older schema upgrades it, which writes: where rein may not
    # write, that is said, and the store is left as it was.
    prefix = _unprivileged()
    ws = tmp_path / "ws"
    state = ws / ".rein"
    state.mkdir(parents=True)
    shutil.copy(Path(__file__).parent / "fixtures" / "v4.db", state / "rein.db")
    _read_only(state)
    before = files(state)
    try:
        done = list_runs(tmp_path, ws, prefix)
        after = files(state)
    finally:
        _writable(state)
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "STORE_READONLY"
    assert "has schema version 4, older than" in error["message"]
    assert after == before
