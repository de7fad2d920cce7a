"""``max_node_executions`` after a crash or a pause: what is run again is counted once.

The crash is made in process: a worker test double raises :class:`Crash` (a
``BaseException``, like the death of the process, nothing catches it) in the middle of an
attempt, which leaves the store exactly as a ``kill -9`` at that instant would: the attempt
started and saved, nothing after it. A second :class:`Engine` on a fresh store connection
then resumes the run, as another rein process would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.core.states import ApprovalStatus, RunStatus
from rein.engine.run.approvals import record_answer
from rein.engine.run.runner import prepare
from rein.workers.base import AttemptRequest, AttemptResult, Item
from rein.workers.scripted import ScriptedWorker
from tests.engine.helpers import make_engine


class Crash(BaseException):
    """The rein process dies here (a test double for SIGKILL)."""


class CrashingOnce:
    """A test double: the first attempt of ``crash_node`` kills the process; every other
    attempt is answered by the scripted worker."""

    name = "scripted"
    deterministic = True

    def __init__(self, script: dict[str, Any], crash_node: str) -> None:
        self.inner = ScriptedWorker(script)
        self.crash_node = crash_node
        self.crashed = False

    def can_serve(self, request: AttemptRequest) -> bool:
        return self.inner.can_serve(request)

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        if request.node_id == self.crash_node and not self.crashed:
            self.crashed = True
            raise Crash
        async for item in self.inner.run(request):
            yield item


def _task(title: str, depends: list[str] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"title": title, "description": f"{title}."}
    if depends:
        node["depends_on"] = depends
    return node


def _write(workspace: Path, nodes: dict[str, Any], ceiling: int) -> Path:
    graph = {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/resume-budget",
        "title": "ceiling", "objective": "count each execution once",
        "requires_conformance": 3, "entrypoints": [next(iter(nodes))],
        "constraints": {"max_node_executions": ceiling}, "nodes": nodes,
    }
    path = workspace / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    return path


SCRIPT = {"nodes": {"a": [{"outputs": {}}], "b": [{"outputs": {}}], "c": [{"outputs": {}}]}}


def test_an_attempt_rerun_after_a_crash_is_counted_once(tmp_path: Path) -> None:
    path = _write(tmp_path, {"a": _task("a"), "b": _task("b", ["a"]), "c": _task("c", ["b"])},
                  ceiling=3)  # exactly the executions of an uninterrupted run
    worker = CrashingOnce(SCRIPT, crash_node="b")
    first = make_engine(tmp_path, workers=(worker,))
    prepared = prepare(path, given={}, router=first.router, env=first.env)
    with pytest.raises(Crash):
        asyncio.run(first.start(prepared, approved=prepared.digest))
    first.store.close()

    second = _next_process(tmp_path, first, worker)
    [run] = second.store.list_runs()
    assert run.status is RunStatus.RUNNING  # as the dead process left it
    outcome = asyncio.run(second.resume(run.run_id))
    assert outcome.status is RunStatus.SUCCEEDED
    record = _record(second, run.run_id)
    [b] = [n for n in record["nodes"] if n["node_id"] == "b"]
    assert [(a["attempt"], a.get("x-rein-rerun")) for a in b["attempts"]] == [(1, True)]
    assert record["usage"]["node_executions"] == 3
    assert not [d for d in record.get("diagnostics", []) if d["code"] == "RT061"]


def test_the_ceiling_still_stops_a_run_that_resumes_past_it(tmp_path: Path) -> None:
    path = _write(tmp_path, {"a": _task("a"), "b": _task("b", ["a"]), "c": _task("c", ["b"])},
                  ceiling=2)  # one short: the fix must not let c run
    worker = CrashingOnce(SCRIPT, crash_node="b")
    first = make_engine(tmp_path, workers=(worker,))
    prepared = prepare(path, given={}, router=first.router, env=first.env)
    with pytest.raises(Crash):
        asyncio.run(first.start(prepared, approved=prepared.digest))
    first.store.close()

    second = _next_process(tmp_path, first, worker)
    [run] = second.store.list_runs()
    outcome = asyncio.run(second.resume(run.run_id))
    assert outcome.status is not RunStatus.SUCCEEDED
    record = _record(second, run.run_id)
    statuses = {n["node_id"]: n["status"] for n in record["nodes"]}
    assert statuses["b"] == "succeeded" and statuses.get("c") != "succeeded"
    assert [d["code"] for d in record["diagnostics"]].count("RT061") == 1


def test_a_gate_continued_in_another_process_is_counted_once(tmp_path: Path) -> None:
    gate = {"type": "gate", "title": "ok", "description": "Approve.",
            "gate": {"mode": "approve", "prompt": "Go on?"}}
    path = _write(tmp_path, {"ok": gate, "a": _task("a", ["ok"])}, ceiling=2)
    first = make_engine(tmp_path, workers=(ScriptedWorker(SCRIPT),))
    prepared = prepare(path, given={}, router=first.router, env=first.env)
    paused = asyncio.run(first.start(prepared, approved=prepared.digest))
    assert paused.status is RunStatus.AWAITING_HUMAN
    [pending] = first.store.approvals(run_id=paused.run_id, status=ApprovalStatus.PENDING)
    record_answer(first.store, pending, ApprovalStatus.ACCEPTED, {"actor": "tester"},
                  first.now())
    first.store.close()

    second = _next_process(tmp_path, first, ScriptedWorker(SCRIPT))
    assert asyncio.run(second.proceed(paused.run_id)).status is RunStatus.SUCCEEDED
    assert _record(second, paused.run_id)["usage"]["node_executions"] == 2


def _next_process(tmp_path: Path, earlier: Any, worker: Any) -> Any:
    """The engine of the next rein process: its own store connection; time goes on."""
    engine = make_engine(tmp_path, workers=(worker,))
    engine.clock, engine.ids = earlier.clock, earlier.ids
    return engine


def _record(engine: Any, run_id: str) -> dict[str, Any]:
    from rein.engine.run.record import build_record, record_problems

    record = build_record(engine.store, run_id)
    assert record_problems(record) == []
    return record
