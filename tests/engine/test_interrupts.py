"""An interrupt is not a cancel.

The main task cancelled (what ``asyncio.run`` does on Ctrl-C, and a server does when it
shuts down) or an error of the store raised in a sibling task leaves the work in flight as
it was, exactly as a kill does: nothing ends ``cancelled``, the run stays resumable, and
resuming runs that work again and reaches the record an uninterrupted run writes. Only a
cancel the engine means (a halt, ``fail_fast``, an operator) records ``cancelled``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rein.core.states import RunStatus
from rein.engine.run.record import build_record
from rein.errors import StoreError
from rein.store.base import Store
from rein.workers.base import AttemptRequest, AttemptResult, Item
from rein.workers.scripted import ScriptedWorker
from tests.durability.support import normalized, reruns
from tests.scenarios.build import Run, graph, inp, out, task

LOOKS = 10_000  # turns of the event loop a test waits for the work to reach its point


class Holding:
    """A test double in front of the scripted worker: an attempt of a node in ``held`` never
    ends (it waits until its task is cancelled); one of a node in ``after`` answers only
    once that many held attempts are waiting. Everything else is the scripted worker's."""

    name = "scripted"
    deterministic = True

    def __init__(self, answers: Mapping[str, Any], *, held: set[str],
                 after: Mapping[str, int] | None = None) -> None:
        self.inner = ScriptedWorker({"nodes": dict(answers)})
        self.held = set(held)
        self.after = dict(after or {})
        self.waiting: list[str] = []

    def can_serve(self, request: AttemptRequest) -> bool:
        return self.inner.can_serve(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        if request.node_id in self.held:
            self.waiting.append(request.node_id)
            await asyncio.Event().wait()  # until the task is cancelled
        need = self.after.get(request.node_id, 0)
        for _ in range(LOOKS):
            if len(self.waiting) >= need:
                break
            await asyncio.sleep(0)
        async for step in self.inner.run(request):
            yield step


def _run(root: Path, data: Mapping[str, Any], answers: Mapping[str, Any], *,
         held: set[str] = frozenset(), after: Mapping[str, int] | None = None
         ) -> tuple[Run, Holding]:
    run = Run(root, data, answers)
    worker = Holding(answers, held=set(held), after=after)
    run.engine.workers = (worker,)
    return run, worker


def _interrupt(run: Run, worker: Holding, waiting: int) -> None:
    """Start the run and cancel its task once ``waiting`` held attempts are in flight,
    as ``asyncio.run`` cancels its main task on SIGINT."""
    async def main() -> None:
        prepared = await run.harness.prepare(run.path, given={})
        started = asyncio.ensure_future(run.harness.start(prepared, approved=prepared.digest))
        for _ in range(LOOKS):
            if len(worker.waiting) >= waiting or started.done():
                break
            await asyncio.sleep(0)
        assert len(worker.waiting) == waiting, worker.waiting
        started.cancel()
        with pytest.raises(asyncio.CancelledError):
            await started

    asyncio.run(main())
    [row] = run.engine.store.list_runs()
    run.run_id = row.run_id


def _statuses(store: Store, run_id: str) -> dict[str, str]:
    return {n.node_key: n.status.value for n in store.nodes(run_id)}


def _event_types(store: Store, run_id: str) -> set[str]:
    return {e.type for e in store.events(run_id)}


def _finish(run: Run) -> RunStatus:
    """Resume the run, answering each question as the uninterrupted run's were answered."""
    status = asyncio.run(run.engine.resume(run.run_id)).status
    while status is RunStatus.AWAITING_HUMAN:
        status = run.answer().status
    return status


def _records(run: Run) -> list[dict[str, Any]]:
    """The run's record and its child runs', in the order they were created."""
    store = run.engine.store
    ids = [run.run_id, *[c.run_id for c in store.child_runs(run.run_id)]]
    return [build_record(store, i) for i in ids]


FAN_AND_CHILD = graph({
    "fan": {"type": "map", "title": "fan", "description": "Fan out.",
            "map": {"over": "['a', 'b', 'c', 'd']", "as": "it", "max_items": 10,
                    "max_parallel": 2, "collect": {"got": "nodes.work.outputs.v"},
                    "body": {"entrypoints": ["work"], "nodes": {"work": task(
                        "work", outputs=out("v"), inputs={"it": inp("it")})}}},
            "outputs": out("got", type="array")},
    "sub": {"type": "subgraph", "title": "sub", "description": "A child run.",
            "subgraph": {"inline": {"entrypoints": ["inner"], "nodes": {
                "inner": task("inner", outputs=out("w"))}},
                "outputs_from": {"w": "outputs.w"}},
            "outputs": out("w")},
    "ok": {"type": "gate", "title": "ok", "description": "Approve.",
           "depends_on": ["fan", "sub"], "gate": {"mode": "approve", "prompt": "Go on?"}},
    "last": task("last", depends_on=["ok"], inputs={"got": inp("nodes.fan.outputs.got",
                                                               "array")}),
}, ["fan", "sub"], constraints={"max_parallel_nodes": 4})
FAN_ANSWERS = {**{f"fan[{i}].work": [{"outputs": {"v": f"v{i}"}}] for i in range(4)},
               "inner": [{"outputs": {"w": "w"}}], "last": [{"outputs": {}}]}


def test_an_interrupt_leaves_map_items_and_a_child_run_in_flight_and_resume_reruns_them(
        tmp_path: Path) -> None:
    (tmp_path / "clean").mkdir()
    clean, _ = _run(tmp_path / "clean", FAN_AND_CHILD, FAN_ANSWERS)
    assert _finish_clean(clean) is RunStatus.SUCCEEDED
    (tmp_path / "cut").mkdir()
    run, worker = _run(tmp_path / "cut", FAN_AND_CHILD, FAN_ANSWERS,
                       held={"fan[2].work", "fan[3].work", "inner"})
    _interrupt(run, worker, waiting=3)

    store = run.engine.store
    assert store.get_run(run.run_id).status is RunStatus.RUNNING
    assert _statuses(store, run.run_id) == {
        "fan": "running", "fan[0].work": "succeeded", "fan[1].work": "succeeded",
        "fan[2].work": "running", "fan[3].work": "running", "sub": "running"}
    [child] = store.child_runs(run.run_id)
    assert child.status is RunStatus.RUNNING
    assert _statuses(store, child.run_id) == {"inner": "running"}
    assert "node/cancelled" not in _event_types(store, run.run_id) | _event_types(
        store, child.run_id)

    worker.held.clear()
    assert _finish(run) is RunStatus.SUCCEEDED
    got, expected = _records(run), _records(clean)
    assert [normalized(r) for r in got] == [normalized(r) for r in expected]
    assert sum(reruns(r) for r in got) == 3  # the three attempts in flight, run again


def _finish_clean(run: Run) -> RunStatus:
    status = run.start().status
    while status is RunStatus.AWAITING_HUMAN:
        status = run.answer().status
    return status


TWO = graph({
    "a": task("a", outputs=out("x")),
    "b": task("b", outputs=out("y")),
    "c": task("c", depends_on=["a", "b"]),
}, ["a", "b"], constraints={"max_parallel_nodes": 2})
TWO_ANSWERS = {"a": [{"outputs": {"x": "x"}}], "b": [{"outputs": {"y": "y"}}],
               "c": [{"outputs": {}}]}


def test_a_store_error_in_one_node_leaves_its_sibling_in_flight(tmp_path: Path) -> None:
    (tmp_path / "clean").mkdir()
    clean, _ = _run(tmp_path / "clean", TWO, TWO_ANSWERS)
    assert _finish_clean(clean) is RunStatus.SUCCEEDED
    (tmp_path / "cut").mkdir()
    run, worker = _run(tmp_path / "cut", TWO, TWO_ANSWERS, held={"a"}, after={"b": 1})
    store = run.engine.store
    real = store.transition

    def busy(run_id: Any, event_type: str, payload: Mapping[str, Any], *args: Any,
             **kwargs: Any) -> Any:
        if event_type == "attempt/finished" and payload.get("node") == "b":
            raise StoreError("database is locked", code="STORE_BUSY", hint="retry")
        return real(run_id, event_type, payload, *args, **kwargs)

    store.transition = busy
    with pytest.raises(StoreError) as raised:
        run.start()
    assert raised.value.code == "STORE_BUSY"
    store.transition = real
    [row] = store.list_runs()
    run.run_id = row.run_id
    assert row.status is RunStatus.RUNNING
    assert _statuses(store, run.run_id) == {"a": "running", "b": "running"}

    worker.held.clear()
    assert _finish(run) is RunStatus.SUCCEEDED
    assert normalized(_records(run)) == normalized(_records(clean))
    assert reruns(_records(run)) == 2  # a and b were both in flight


HALTING = graph({
    "fan": FAN_AND_CHILD["nodes"]["fan"],
    "bad": task("bad"),
}, ["fan", "bad"], constraints={"max_parallel_nodes": 2},
    policy={"on_node_failure": "halt"})


def test_a_halt_cancels_the_work_it_stops_and_everything_under_it(tmp_path: Path) -> None:
    answers = {**FAN_ANSWERS, "bad": [{"failure": "tool_error"}]}
    run, _ = _run(tmp_path, HALTING, answers, held={"fan[0].work", "fan[1].work"},
                  after={"bad": 2})
    assert run.start().status is RunStatus.FAILED
    store = run.engine.store
    assert _statuses(store, run.run_id) == {
        "fan": "cancelled", "fan[0].work": "cancelled", "fan[1].work": "cancelled",
        "bad": "failed"}
    reasons = {n.node_key: n.record.get("x-rein-cancel-reason")
               for n in store.nodes(run.run_id)}
    assert reasons["fan"] == reasons["fan[0].work"] == "halted after a failure"


FAST = graph({"fan": {**FAN_AND_CHILD["nodes"]["fan"], "map": {
    **FAN_AND_CHILD["nodes"]["fan"]["map"], "on_item_failure": "fail_fast"}}}, ["fan"],
    constraints={"max_parallel_nodes": 2})


def test_fail_fast_cancels_the_items_in_flight_with_its_reason(tmp_path: Path) -> None:
    answers = {**FAN_ANSWERS, "fan[0].work": [{"failure": "tool_error"}]}
    run, _ = _run(tmp_path, FAST, answers, held={"fan[1].work"}, after={"fan[0].work": 1})
    assert run.start().status is RunStatus.FAILED
    store = run.engine.store
    assert _statuses(store, run.run_id) == {
        "fan": "failed", "fan[0].work": "failed", "fan[1].work": "cancelled"}
    [item] = [n for n in store.nodes(run.run_id) if n.node_key == "fan[1].work"]
    assert item.record["x-rein-cancel-reason"] == "fail_fast: another item failed"
