"""The Harness service: one composition root, async use cases, the clock it is given.

A server runs its own event loop: every test here awaits the Harness (or the engine) from
inside one, as a server would.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.config import Config
from rein.core.states import ApprovalStatus, RunStatus
from rein.engine.run.clock import CounterIds, StepClock
from rein.engine.service import Harness
from rein.errors import ReinError

from .helpers import make_engine

TASK = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/service", "title": "t",
        "objective": "o", "requires_conformance": 3, "entrypoints": ["a"],
        "nodes": {"a": {"title": "a", "description": "Say hello."}}}
GATE = {**TASK, "nodes": {"a": {
    "title": "a", "description": "Wait for a person.", "type": "gate",
    "gate": {"mode": "approve", "prompt": "go?", "timeout_seconds": 60,
             "on_timeout": "approve"}}}}
CLOCK_START = dt.datetime(2030, 5, 1, tzinfo=dt.UTC)


def _graph(root: Path, data: dict[str, Any]) -> Path:
    path = root / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _harness(root: Path, **kwargs: Any) -> Harness:
    return Harness.open(root, Config(data={}, sources={}), clock=StepClock(start=CLOCK_START),
                        ids=CounterIds(), env={"PATH": "/usr/bin:/bin"}, **kwargs)


def test_the_engine_starts_a_run_inside_a_running_event_loop(tmp_path: Path) -> None:
    # The engine used to call asyncio.run itself, which refuses to run inside a loop: a
    # server with its own loop could not start a run at all.
    engine = make_engine(tmp_path)
    path = _graph(tmp_path, TASK)

    async def server() -> RunStatus:
        from rein.engine.run.runner import prepare

        prepared = prepare(path, given={}, env=engine.env)
        return (await engine.start(prepared, approved=prepared.digest)).status

    try:
        assert asyncio.run(server()) is RunStatus.WAITING  # no worker: it waits for one
    finally:
        engine.store.close()


def test_a_driver_turn_is_handed_out_and_taken_back_on_the_harness_clock(
        tmp_path: Path) -> None:
    path = _graph(tmp_path, TASK)

    async def drive() -> tuple[dict[str, Any], Any]:
        with _harness(tmp_path) as harness:
            prepared = await harness.prepare(path, given={})
            started = await harness.start(prepared, approved=prepared.digest)
            assert started.status is RunStatus.WAITING
            status = await harness.next()
            assert status["status"] == "instruction", status
            submitted = await harness.submit(dict(status["example"]))
            turns = harness.store.events(started.run_id, types=["driver/answered"])
            return submitted.status, turns

    status, answered = asyncio.run(drive())
    assert status["status"] == "done", status
    # The answer is stamped by the clock the Harness was given, not the wall clock.
    assert [e.at[:4] for e in answered] == ["2030"]


def test_due_approval_timeouts_are_applied_at_the_harness_clock(tmp_path: Path) -> None:
    path = _graph(tmp_path, GATE)

    async def go() -> tuple[list[Any], list[Any]]:
        with _harness(tmp_path) as harness:
            prepared = await harness.prepare(path, given={})
            started = await harness.start(prepared, approved=prepared.digest)
            assert started.status is RunStatus.AWAITING_HUMAN
            early = await harness.expire_due()  # the clock has moved seconds, not a minute
            late = await harness.expire_due(CLOCK_START + dt.timedelta(hours=1))
            return early, late

    early, late = asyncio.run(go())
    assert early == []
    assert [r.status for r in late] == [ApprovalStatus.ACCEPTED]


def test_an_answer_names_the_approver_rein_knows_and_refuses_another(tmp_path: Path) -> None:
    path = _graph(tmp_path, GATE)

    async def go() -> Any:
        with _harness(tmp_path) as harness:
            prepared = await harness.prepare(path, given={})
            await harness.start(prepared, approved=prepared.digest)
            [row] = harness.approvals()
            with pytest.raises(ReinError) as refused:
                await harness.answer(row.approval_id, ApprovalStatus.ACCEPTED,
                                     actor="someone-else")
            assert refused.value.code == "APPROVAL_ACTOR"
            assert harness.approvals() == [row]  # nothing was recorded
            return await harness.answer(row.approval_id, ApprovalStatus.ACCEPTED)

    answered = asyncio.run(go())
    assert answered.changed and answered.outcome is not None
    assert answered.outcome.status is RunStatus.SUCCEEDED
    assert answered.approval.answer["actor"] == answered.actor


def test_subscribe_replays_the_stored_events_in_order(tmp_path: Path) -> None:
    path = _graph(tmp_path, TASK)

    async def go() -> tuple[list[int], list[int]]:
        with _harness(tmp_path) as harness:
            prepared = await harness.prepare(path, given={})
            run = await harness.start(prepared, approved=prepared.digest)
            seen = [e.seq async for e in harness.subscribe(run.run_id)]
            return seen, [e.seq for e in harness.events(run.run_id)]

    seen, stored = asyncio.run(go())
    assert seen == stored and seen == sorted(seen) and seen


def test_a_harness_that_may_not_create_a_store_writes_nothing(tmp_path: Path) -> None:
    with _harness(tmp_path, create=False) as harness, pytest.raises(ReinError) as missing:
        harness.runs()
    assert missing.value.code == "STORE404"
    assert not (tmp_path / ".rein").exists()


def test_a_submit_says_whether_it_applied_the_envelope_as_a_flag_not_in_words(
        tmp_path: Path) -> None:
    # The Harness used to tell an applied envelope from a repeated one by whether its note
    # began with "accepted": the note is words for a person, the flag is what code reads.
    path = _graph(tmp_path, {**TASK, "nodes": {
        "a": TASK["nodes"]["a"], "b": {"title": "b", "description": "Then this.",
                                       "depends_on": ["a"]}}})

    async def drive() -> tuple[Any, Any, dict[str, Any]]:
        with _harness(tmp_path) as harness:
            prepared = await harness.prepare(path, given={})
            await harness.start(prepared, approved=prepared.digest)
            envelope = dict((await harness.next())["example"])
            first = await harness.submit(envelope)
            again = await harness.submit(envelope)
            return first, again, await harness.next()

    first, again, after = asyncio.run(drive())
    assert (first.accepted, again.accepted) == (True, False)
    assert first.note.startswith("accepted for a attempt 1")
    assert "already applied" in again.note
    assert after["status"] == "instruction" and after["node"] == "b", after
