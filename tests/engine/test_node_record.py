"""A node's state and its entry of the run record (``node_run``), in both directions:
``NodeState.to_record`` writes it (redacted values left out), ``NodeState.adopt`` takes a
stored one back when a run continues in another process. What the node's steps add (its
times, attempts, human events, end fields) is a typed value, :class:`NodeRecord`, replaced
as the node goes, never written in place."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from rein.core.ids import NodeKey
from rein.core.states import NodeStatus, RunStatus
from rein.engine.run.graph import scope_model
from rein.engine.run.kinds.attempt_end import AttemptRecord, AttemptStart, NodeRecord
from rein.engine.run.runner import prepare
from rein.engine.run.runtime import NodeState
from rein.store.base import Transition
from rein.workers.scripted import ScriptedWorker

from .helpers import make_engine

MODEL = scope_model({"entrypoints": ["a"], "nodes": {"a": {
    "type": "decision", "title": "a",
    "outputs": {"report": {"type": "string", "description": "r"},
                "token": {"type": "string", "description": "t", "redact": True}}}}})


def _ended() -> NodeState:
    state = NodeState(status=NodeStatus.SUCCEEDED, outputs={"report": "r.md", "token": "s3"},
                      decision="go", attempts=2, inputs={"x": 1}, duration=1.5,
                      degraded=True, unabsorbed=False)
    state.record = NodeRecord(
        started_at="t0", finished_at="t1", duration=1.5,
        attempts=tuple(AttemptRecord(start=AttemptStart(attempt=n, started_at=f"t{n}"))
                       for n in (1, 2)))
    return state


def test_a_record_leaves_redacted_values_out_and_says_which() -> None:
    rec = _ended().to_record(MODEL, "a", NodeKey("loop[1].a"))
    assert rec == {"started_at": "t0", "attempts": [{"attempt": 1, "started_at": "t1"},
                                                    {"attempt": 2, "started_at": "t2"}],
                   "finished_at": "t1", "x-rein-duration-seconds": 1.5, "node_id": "a",
                   "type": "decision", "status": "succeeded", "scope_path": "loop[1].a",
                   "inputs": {"x": 1}, "outputs": {"report": "r.md"},
                   "x-rein-redacted": ["token"], "decision": "go", "x-rein-degraded": True}


def test_a_stored_record_gives_back_the_state_that_wrote_it() -> None:
    ended = _ended()
    ended.outputs.pop("token")  # never written: a replay does not adopt a redacted node
    rec = ended.to_record(MODEL, "a", NodeKey("a"))
    taken = NodeState(status=NodeStatus.SUCCEEDED)
    taken.adopt(rec)
    assert taken.to_record(MODEL, "a", NodeKey("a")) == rec
    assert taken.record == ended.record
    assert taken.adopted and not ended.adopted
    assert taken.replace(adopted=False) == ended


def test_a_stored_record_reads_back_field_for_field_what_it_does_not_model_included() -> None:
    # Fields a newer rein (or recovery's mark) wrote are kept as read, and an error text
    # today's rein would not write as it reads stays as it was.
    stored = {"started_at": "t0", "finished_at": "t9", "x-rein-duration-seconds": 2.0,
              "escalated": True, "child_run_id": "run-2", "x-future": [1],
              "human_events": [{"at_stage": "gate", "mode": "notify", "outcome": "notified",
                                "at": "t1"}],
              "attempts": [
                  {"attempt": 1, "started_at": "t1", "x-rein-rerun": True,
                   "usage": {"tool_calls": 0}, "routed": {"provider": "p"},
                   "x-rein-profile": {"name": "x"}, "status": "failed", "finished_at": "t2",
                   "error": "written by hand", "x-rein-failure-class": "transient"},
                  {"attempt": 2, "started_at": "t3", "x-rein-interrupted": True}]}
    assert NodeRecord.from_record(stored).to_record() == stored


def test_a_step_replaces_the_record_it_does_not_change_it() -> None:
    before = NodeRecord(started_at="t0")
    opened = before.with_attempt(AttemptRecord(start=AttemptStart(attempt=1, started_at="t1")))
    noted = opened.noting({"escalated": True}).with_human({"at": "t2"})
    assert before.to_record() == {"started_at": "t0"}
    assert opened.to_record() == {"started_at": "t0",
                                  "attempts": [{"attempt": 1, "started_at": "t1"}]}
    assert noted.to_record()["escalated"] is True and noted.human_events == ({"at": "t2"},)


GRAPH = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/rows", "title": "t",
         "objective": "o", "requires_conformance": 3, "entrypoints": ["a"],
         "nodes": {"a": {"title": "a", "description": "a.",
                         "failure": {"retry": {"max_attempts": 2, "backoff": "none",
                                               "retry_on": ["any"]}}}}}


def test_a_row_handed_to_the_store_is_not_changed_by_the_steps_after_it(tmp_path: Path) -> None:
    # Each write hands the store a node row: what the node was at that moment. A later
    # step (the attempt's end, the node's) makes a new record; it does not reach back into
    # the row already written.
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    worker = ScriptedWorker({"nodes": {"a": [{"failure": "transient", "message": "no"},
                                             {"outputs": {}}]}})
    engine = make_engine(tmp_path, workers=(worker,))
    handed: list[tuple[str, dict[str, Any], str]] = []
    real = engine.store.transition

    def keeping(run_id: Any, event_type: str, payload: Any, at: str,
                change: Transition | None = None, **kw: Any) -> Any:
        if change is not None and change.node is not None:
            record = change.node.record
            handed.append((event_type, record, repr(record)))
        return real(run_id, event_type, payload, at, change, **kw)

    engine.store.transition = keeping  # type: ignore[method-assign]
    prepared = prepare(path, given={}, router=engine.router, env=engine.env)
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    engine.store.close()
    assert outcome.status is RunStatus.SUCCEEDED
    assert [t for t, _, _ in handed] == [
        "node/started", "attempt/started", "attempt/finished", "attempt/started",
        "attempt/finished", "node/finished"]
    for event_type, record, then in handed:
        assert repr(record) == then, event_type
    opened = handed[1][1]
    assert [a.get("status") for a in opened["attempts"]] == [None]  # still in flight
