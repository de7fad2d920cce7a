"""The coordinator reads which attempts ended in one lean statement (rein.executors.ended),
not through DBOS's ``list_workflows`` (about 1.5 ms of CPU a call), and reads what DBOS's own
read gives: the status, the decoded output and the error of each."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from tests.executors.cluster import Cluster, map_graph
from tests.executors.test_forged_jobs import ended, forge

pytestmark = pytest.mark.timeout(900)

DONE = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]


def test_the_coordinator_reads_ended_attempts_without_list_workflows(
        tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dbos import DBOSClient

    from rein.engine.run.runner import Engine, prepare
    from rein.executors.ended import EndedReader, listed
    from rein.executors.names import WORKFLOW
    from rein.executors.serialization import json_only
    from rein.store.postgres import PostgresStore
    from rein.workers.scripted import ScriptedWorker

    reads: list[Any] = []  # list_workflows calls that read attempts by id
    original = DBOSClient.list_workflows

    def spied(self: Any, *a: Any, **kw: Any) -> Any:
        if kw.get("workflow_ids"):
            reads.append(kw["workflow_ids"])
        return original(self, *a, **kw)

    monkeypatch.setattr(DBOSClient, "list_workflows", spied)
    items = 6
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    store = None
    try:
        c.worker("w1")
        c.workers_ready("w1")
        graph = c.ws / "map.agraph.yaml"
        graph.write_text(yaml.safe_dump(map_graph(items, 4), sort_keys=False))
        store = PostgresStore(db_url)
        engine = Engine(workspace=c.ws, store=store,
                        workers=(ScriptedWorker({"nodes": {"w": [{"outputs": {"v": "x"}}]}}),),
                        env={"REIN_EXECUTOR": "dbos", "REIN_QUEUE_KEY_FILE": str(c.key)})
        prepared = prepare(graph, given={}, env={})
        outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
        refused = forge(c, WORKFLOW, "not signed")  # a worker ends it ERROR (SCALE010)
        assert ended(c, refused)[0] == "ERROR"
        ids = [str(r[0]) for r in c.query(
            "SELECT workflow_uuid FROM dbos.workflow_status WHERE name = %s", WORKFLOW)]
        client = DBOSClient(system_database_url=db_url, application_name="rein",
                            serializer=json_only())
        try:
            by_dbos = listed(client.list_workflows)(ids, DONE)
        finally:
            client.destroy()
        reader = EndedReader.open(db_url, json_only(), lambda i, s: [])
        assert reader is not None
        try:
            lean = reader.read(ids, DONE)
            assert reader.lean == 1
        finally:
            reader.close()
    finally:
        if store is not None:
            store.close()
        c.stop()
    assert outcome.status.value == "succeeded"
    assert reads == [ids]  # the comparison's own read only: none by the coordinator
    assert len(ids) == items + 1
    mine = {e.workflow_id: (e.status, e.output, str(e.error)) for e in lean}
    theirs = {e.workflow_id: (e.status, e.output, str(e.error)) for e in by_dbos}
    assert mine == theirs
    assert mine[refused][0] == "ERROR" and "SCALE010" in mine[refused][2]
    assert all(isinstance(out, str) and out.startswith("rein-signed-1 ")
               for status, out, _ in mine.values() if status == "SUCCESS")


def test_tables_of_another_shape_leave_the_read_to_dbos(db_url: str) -> None:
    from rein.executors.ended import EndedReader

    with psycopg.connect(db_url, autocommit=True) as conn:  # no DBOS tables at all
        assert conn.execute("SELECT to_regclass('dbos.workflow_status')").fetchone() == (None,)
    assert EndedReader.open(db_url, None, lambda i, s: []) is None
