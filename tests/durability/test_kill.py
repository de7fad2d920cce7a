"""The kill test: SIGKILL rein at seeded points of a run, resume, and compare the record
with an uninterrupted run's (modulo ids, timestamps and the re-run marks)."""

from __future__ import annotations

import os
import random
import shutil
import signal
from pathlib import Path

import pytest

from tests.durability import graphs
from tests.durability.support import (
    event_count,
    finished_counts,
    normalized,
    record,
    rein,
    reruns,
    runs,
    start,
    wait_for,
    write_graph,
)

KILLS = 16
SEED = 20260101

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and SIGKILL")


def _finish(workspace: Path) -> str:
    """Resume the workspace's run until it ends; returns its id."""
    [row] = runs(workspace)
    for _ in range(5):
        done = rein(workspace, "resume", row["run_id"])
        if done.returncode in (0, 1):
            return row["run_id"]
    raise AssertionError(f"run {row['run_id']} did not finish: {done.stderr}")


@pytest.mark.timeout(300)  # ~35 rein processes; slower on a loaded machine
def test_kill_anywhere_then_resume_gives_the_uninterrupted_record(tmp_path: Path) -> None:
    graph, answers = graphs.chain()
    clean = tmp_path / "clean"
    clean.mkdir()
    digest = write_graph(clean, graph, answers)
    done = rein(clean, "run", "g.agraph.yaml", "--approve", digest)
    assert done.returncode == 0, done.stderr
    [row] = runs(clean)
    expected = record(clean, row["run_id"])
    assert expected["status"] == "succeeded"
    total = event_count(clean)
    expected_files = {p.name: p.read_text() for p in clean.glob("*.txt")}

    rng = random.Random(SEED)
    interrupted = 0
    for i in range(KILLS):
        ws = tmp_path / f"kill{i}"
        ws.mkdir()
        write_graph(ws, graph, answers)
        after = rng.randint(1, total - 1)  # the kill lands somewhere after event `after`
        proc = start(ws, "run", "g.agraph.yaml", "--approve", digest)
        reached = wait_for(lambda ws=ws, after=after, proc=proc: event_count(ws) >= after
                           or proc.poll() is not None)
        assert reached
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.returncode == -signal.SIGKILL:
            interrupted += 1
        run_id = _finish(ws)
        got = record(ws, run_id)
        assert normalized(got) == normalized(expected), f"kill {i} after event {after}"
        assert reruns(got) <= 1
        assert finished_counts(ws, run_id) == {"a": 1, "b": 1, "c": 1, "d": 1}
        assert {p.name: p.read_text() for p in ws.glob("*.txt")} == expected_files
        shutil.rmtree(ws)
    assert interrupted >= KILLS // 2  # most kills landed while rein was still working


def test_a_crash_during_a_command_check_leaves_no_orphaned_group(tmp_path: Path) -> None:
    graph, answers = graphs.hanging_check()
    digest = write_graph(tmp_path, graph, answers)
    proc = start(tmp_path, "run", "g.agraph.yaml", "--approve", digest)
    assert wait_for(lambda: (tmp_path / "check.pid").exists()
                    and (tmp_path / "child.pid").exists())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    check_pid = int((tmp_path / "check.pid").read_text())
    child_pid = int((tmp_path / "child.pid").read_text())
    assert _alive(check_pid) and _alive(child_pid)  # the group outlived its rein

    [row] = runs(tmp_path)
    done = rein(tmp_path, "resume", row["run_id"])
    assert done.returncode == 0, done.stderr
    assert not _alive(check_pid) and not _alive(child_pid)
    got = record(tmp_path, row["run_id"])
    [node] = got["nodes"]
    assert [a["attempt"] for a in node["attempts"]] == [1]
    assert node["attempts"][0]["x-rein-rerun"] is True
    events = rein(tmp_path, "runs", "events", row["run_id"], "--json").stdout
    assert '"process/stopped"' in events and '"outcome":"killed"' in events.replace(" ", "")


def test_an_interrupted_irreversible_attempt_waits_for_a_person(tmp_path: Path) -> None:
    graph, answers = graphs.irreversible()
    digest = write_graph(tmp_path, graph, answers)
    proc = start(tmp_path, "run", "g.agraph.yaml", "--approve", digest)
    assert wait_for(lambda: (tmp_path / "check.pid").exists())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    [row] = runs(tmp_path)
    done = rein(tmp_path, "resume", row["run_id"])
    assert done.returncode == 3, done.stderr  # waiting for a person
    listed = rein(tmp_path, "approvals", "list", "--json")
    import json

    [ask] = json.loads(listed.stdout)["approvals"]
    assert ask["kind"] == "escalation" and ask["request"]["reason"] == "irreversible"
    assert ask["request"]["attempt"] == 1
    done = rein(tmp_path, "approvals", "accept", ask["approval_id"])
    assert done.returncode == 0, done.stderr
    [node] = record(tmp_path, row["run_id"])["nodes"]
    assert node["status"] == "succeeded" and node["attempts"][0]["x-rein-rerun"] is True


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"
