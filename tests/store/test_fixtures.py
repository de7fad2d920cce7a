"""Every released schema version stays readable: open each fixture with today's code.

The fixtures were written by ``fixtures/make_fixture.py`` with the rein of their version;
opening one migrates a copy to the current schema, and everything it held must read back.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from rein.core.ids import RunId
from rein.core.states import ApprovalStatus, NodeStatus, RunStatus, TurnStatus
from rein.engine.run.record import build_record, record_problems
from rein.store.base import DriverTurn, WorkspaceRef
from rein.store.sqlite import SCHEMA_VERSION, SQLiteStore

FIXTURES = Path(__file__).parent / "fixtures"
VERSIONS = sorted(int(m.group(1)) for p in FIXTURES.glob("v*.db")
                  if (m := re.fullmatch(r"v(\d+)\.db", p.name)))


def test_there_is_a_fixture_for_every_released_version() -> None:
    # The newest version may be unreleased (no fixture yet) while it is being written.
    assert VERSIONS[0] == 1
    assert VERSIONS == list(range(1, VERSIONS[-1] + 1))
    assert VERSIONS[-1] >= SCHEMA_VERSION - 1


@pytest.mark.parametrize("version", VERSIONS)
def test_fixture_opens_migrates_and_reads_back(version: int, tmp_path: Path) -> None:
    copy = tmp_path / "rein.db"
    shutil.copy(FIXTURES / f"v{version}.db", copy)
    store = SQLiteStore(copy)
    try:
        assert store.schema_version() == SCHEMA_VERSION
        top = store.get_run("run-fixture-1")
        assert top is not None and top.status is RunStatus.SUCCEEDED
        assert top.summary == {"outputs": {"report": "ok"}}
        assert top.binding["params"] == {"n": 1}
        [child] = store.child_runs(RunId("run-fixture-1"))
        assert child.run_id == "run-fixture-1-child" and child.parent_node_key == "sub"
        [node] = store.nodes(RunId("run-fixture-1"))
        assert node.status is NodeStatus.SUCCEEDED and node.record["outputs"] == {"report": "ok"}
        types = [e.type for e in store.events(RunId("run-fixture-1"))]
        assert types == ["run/started", "node/started", "node/finished", "run/finished"]
        [pending] = store.approvals(status=ApprovalStatus.PENDING)
        assert pending.approval_id == "apv-fixture-1" and pending.request["prompt"] == "Publish?"
        paused = store.get_run("run-fixture-2")
        assert paused is not None and paused.status is RunStatus.AWAITING_HUMAN
        driver_run = ["run-fixture-3"] if version >= 4 else []
        assert [r.run_id for r in store.list_runs()] == [*driver_run, "run-fixture-2",
                                                         "run-fixture-1"]
        record = build_record(store, "run-fixture-1")
        assert record_problems(record) == []
        assert record["usage"]["input_tokens"] == 10
        # The migrated store accepts new writes after the old ones.
        event = store.transition(RunId("run-fixture-2"), "note", {}, "2026-01-02T00:00:00Z")
        assert event.seq == 3
    finally:
        store.close()


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 4])
def test_driver_turns_read_back_in_the_order_they_were_issued(version: int, tmp_path: Path
                                                             ) -> None:
    copy = tmp_path / "rein.db"
    shutil.copy(FIXTURES / f"v{version}.db", copy)
    store = SQLiteStore(copy)
    try:
        # Attempt 2 was issued last although its clock said earlier: issue order wins.
        answered, pending = store.driver_turns("run-fixture-3")
        assert (answered.token, answered.status) == ("drv-fixture-1", TurnStatus.ANSWERED)
        assert answered.answer == {"envelope": {"token": "drv-fixture-1", "status": "done"},
                                   "checks": {}}
        assert (pending.token, pending.status, pending.attempt) == \
            ("drv-fixture-2", TurnStatus.PENDING, 2)
        types = [e.type for e in store.events(RunId("run-fixture-3"))]
        assert types == ["run/started", "driver/instructed", "driver/answered",
                         "driver/instructed"]
    finally:
        store.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_runs_keep_their_workspace_and_older_runs_have_none(version: int, tmp_path: Path
                                                            ) -> None:
    """Version 6 records the workspace a run belongs to; runs stored before have none, and
    a query for them by workspace finds them as such."""
    copy = tmp_path / "rein.db"
    shutil.copy(FIXTURES / f"v{version}.db", copy)
    store = SQLiteStore(copy)
    try:
        top = [r.run_id for r in store.list_runs()]
        unscoped = [r.run_id for r in store.list_runs(workspaces=[None])]
        scoped = [r.run_id for r in store.list_runs(workspaces=["ws-fixture"])]
        if version >= 6:
            driver_run = store.get_run("run-fixture-3")
            assert driver_run is not None
            assert driver_run.workspace == WorkspaceRef(
                id="ws-fixture", path="/fixture/workspace", host="fixture-host")
            assert (scoped, unscoped) == (["run-fixture-3"], ["run-fixture-2", "run-fixture-1"])
        else:
            assert all(r.workspace is None for r in store.list_runs(include_children=True))
            assert (scoped, unscoped) == ([], top)
        assert store.list_runs(workspaces=[]) == []
    finally:
        store.close()


def test_turns_written_before_version_4_are_ordered_by_issue_time(tmp_path: Path) -> None:
    """Version 4 numbers existing turns (SQLite's rowid order is not portable SQL)."""
    copy = tmp_path / "rein.db"
    shutil.copy(FIXTURES / "v3.db", copy)
    conn = sqlite3.connect(copy)
    for token, at in (("drv-b", "2026-01-01T00:00:02Z"), ("drv-a", "2026-01-01T00:00:02Z"),
                      ("drv-c", "2026-01-01T00:00:01Z")):
        conn.execute("INSERT INTO driver_turns (token, run_id, root_run_id, node_key, attempt,"
                     " kind, status, instruction, baseline, created_at) VALUES"
                     " (?, 'run-fixture-2', 'run-fixture-2', 'n', 1, 'task', 'pending',"
                     " '{}', '{}', ?)", (token, at))
    conn.commit()
    conn.close()
    store = SQLiteStore(copy)
    try:
        assert [t.token for t in store.driver_turns("run-fixture-2")] == \
            ["drv-c", "drv-a", "drv-b"]
        store.add_driver_turn(
            DriverTurn(token="drv-new", run_id=RunId("run-fixture-2"),
                       root_run_id=RunId("run-fixture-2"), node_key="n", attempt=2,
                       kind="task", status=TurnStatus.PENDING, instruction={}, baseline={},
                       created_at="2026-01-01T00:00:00Z"),
            event_type="driver/instructed", payload={})
        assert store.driver_turns("run-fixture-2")[-1].token == "drv-new"
    finally:
        store.close()
