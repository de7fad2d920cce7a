"""Two rein processes never both advance one run; independent runs proceed in parallel."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rein.errors import Refused
from rein.store.sqlite import SQLiteStore
from tests.durability import graphs
from tests.durability.support import rein, runs, start, write_graph

pytestmark = pytest.mark.skipif(os.name != "posix", reason="flock")


def _paused_run(workspace: Path) -> tuple[str, str]:
    graph, answers = graphs.gated()
    digest = write_graph(workspace, graph, answers)
    done = rein(workspace, "run", "g.agraph.yaml", "--approve", digest)
    assert done.returncode == 3, done.stderr
    [row] = runs(workspace)
    listed = json.loads(rein(workspace, "approvals", "list", "--json").stdout)
    [ask] = listed["approvals"]
    return row["run_id"], ask["approval_id"]


def test_concurrent_accept_and_resumes_advance_the_run_once(tmp_path: Path) -> None:
    run_id, approval = _paused_run(tmp_path)
    procs = [start(tmp_path, "approvals", "accept", approval),
             start(tmp_path, "resume", run_id), start(tmp_path, "resume", run_id),
             start(tmp_path, "approvals", "accept", approval)]
    codes = [p.wait(timeout=60) for p in procs]
    errors = [p.stderr.read() for p in procs if p.stderr is not None]
    assert set(codes) <= {0, 3, 4}, (codes, errors)
    assert (tmp_path / "count.log").read_text() == "once\n"  # the task ran exactly once
    [row] = runs(tmp_path)
    assert row["status"] == "succeeded"
    for code, err in zip(codes, errors, strict=True):
        if code == 4:
            assert "RUN_LOCKED" in err or "being advanced by another rein process" in err


def test_independent_runs_proceed_in_parallel(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    (_, apv1), (_, apv2) = _paused_run(first), _paused_run(second)
    procs = [start(first, "approvals", "accept", apv1), start(second, "approvals", "accept", apv2)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert runs(first)[0]["status"] == runs(second)[0]["status"] == "succeeded"


def test_two_runs_in_one_store_are_locked_separately(tmp_path: Path) -> None:
    one = SQLiteStore.open(tmp_path)
    two = SQLiteStore(one.path)
    try:
        # Re-entrant in a process; another run's lock is independent.
        with one.lock_run("run-a"), one.lock_run("run-a"), two.lock_run("run-b"):
            pass
    finally:
        one.close()
        two.close()


def test_a_lock_held_by_another_process_is_refused_and_dies_with_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = SQLiteStore.open(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         ("import sys, time; from rein.store.sqlite import SQLiteStore; "
          f"s = SQLiteStore.open({str(tmp_path)!r}); l = s.lock_run('run-x'); l.__enter__(); "
          "print('held', flush=True); sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(Refused) as refused, store.lock_run("run-x"):
            pass
        assert refused.value.code == "RUN_LOCKED"
        holder.kill()  # SIGKILL: no cleanup code runs in the holder
        holder.wait()
        with store.lock_run("run-x"):
            pass
    finally:
        if holder.poll() is None:
            holder.kill()
        store.close()
