"""How an attempt ended, typed, and the fields of its record (``rein.engine.run.kinds.
attempt_end``): written by the attempt that ends, read back by the replay that adopts it.

The retry after a pause hears the same failure, word for word, as the retry in the process
where the attempt failed: the value round-trips through the record, no text is split.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.core.failures import FailureClass
from rein.core.states import AttemptStatus, RunStatus
from rein.engine.run.kinds.attempt_end import AttemptEnd
from rein.engine.run.record import build_record
from rein.engine.run.runner import prepare
from rein.workers.base import AttemptRequest
from rein.workers.scripted import ScriptedWorker

from .helpers import make_engine

AT = "2026-01-01T00:00:00Z"
ENDS = [
    AttemptEnd(attempt=1, status=AttemptStatus.SUCCEEDED, finished_at=AT),
    AttemptEnd(attempt=2, status=AttemptStatus.FAILED, finished_at=AT,
               failure=FailureClass.TRANSIENT, message="merge conflict: a.py"),
    AttemptEnd(attempt=3, status=AttemptStatus.TIMEOUT, finished_at=AT,
               failure=FailureClass.TIMEOUT, message="timeout: after 30 s"),
    AttemptEnd(attempt=4, status=AttemptStatus.CRITERIA_FAILED, finished_at=AT,
               failure=FailureClass.CRITERIA_FAILED, message="success criteria failed",
               success={"passed": False, "results": []}, outputs={"report": "r.md"}),
    AttemptEnd(attempt=5, status=AttemptStatus.FAILED, finished_at=AT,
               failure=FailureClass.PERMISSION_DENIED),
]


@pytest.mark.parametrize("end", ENDS, ids=lambda e: str(e.attempt))
def test_an_end_reads_back_from_its_record_as_it_was(end: AttemptEnd) -> None:
    assert AttemptEnd.from_record({"attempt": end.attempt, **end.to_record()}) == end


def test_the_record_keeps_the_message_apart_from_the_error_text() -> None:
    # The error text AGS defines, and beside it the message on its own (x-rein-message).
    assert ENDS[3].to_record() == {
        "status": "criteria_failed", "finished_at": AT,
        "success": {"passed": False, "results": []},
        "error": "criteria_failed: success criteria failed",
        "x-rein-message": "success criteria failed",
        "x-rein-failure-class": "criteria_failed", "x-rein-outputs": {"report": "r.md"}}
    assert list(ENDS[1].to_record()) == ["status", "finished_at", "error", "x-rein-message",
                                         "x-rein-failure-class"]
    assert ENDS[4].to_record()["error"] == "permission_denied"
    assert "x-rein-message" not in ENDS[4].to_record()


@pytest.mark.parametrize("message", ["expected one of:", "trailing space ", "",
                                     "transient: said twice"])
def test_a_message_the_error_text_cannot_carry_reads_back_as_it_was(message: str) -> None:
    # The error text drops a trailing colon or space, and an empty message: taking the
    # message back out of that text could not give it back.
    end = AttemptEnd(attempt=1, status=AttemptStatus.FAILED, finished_at=AT,
                     failure=FailureClass.TRANSIENT, message=message)
    assert AttemptEnd.from_record({"attempt": 1, **end.to_record()}) == end


def test_a_record_written_before_the_message_was_kept_apart_still_reads() -> None:
    old = {"attempt": 2, "status": "failed", "finished_at": AT,
           "error": "transient: merge conflict: a.py", "x-rein-failure-class": "transient"}
    assert AttemptEnd.from_record(old) == ENDS[1]
    unclassified = {"attempt": 1, "status": "criteria_failed", "finished_at": AT,
                    "error": "written by hand"}
    got = AttemptEnd.from_record(unclassified)
    assert got is not None
    assert (got.failure, got.message) == (FailureClass.CRITERIA_FAILED, "written by hand")


def test_an_attempt_in_flight_has_no_end() -> None:
    assert AttemptEnd.from_record({"attempt": 1, "started_at": AT}) is None


GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/adopted-feedback",
    "title": "t", "objective": "o", "requires_conformance": 3, "entrypoints": ["a"],
    "nodes": {"a": {"title": "a", "description": "a.",
                    "failure": {"retry": {"max_attempts": 2, "backoff": "none",
                                          "retry_on": ["any"]}}}},
}
SCRIPT = {"nodes": {"a": [{"failure": "transient", "message": "merge conflict: a.py"},
                          {"outputs": {}}]}}


class Recording(ScriptedWorker):
    """The scripted test double, keeping every request; ``attempts``: those it serves."""

    def __init__(self, script: dict[str, Any], attempts: tuple[int, ...]) -> None:
        super().__init__(script)
        self.attempts = attempts
        self.requests: list[AttemptRequest] = []

    def can_serve(self, request: AttemptRequest) -> bool:
        return request.attempt in self.attempts and super().can_serve(request)

    def run(self, request: AttemptRequest) -> Any:  # type: ignore[override]
        self.requests.append(request)
        return super().run(request)


def _second_request(workspace: Path, *, pause: bool) -> AttemptRequest:
    workspace.mkdir()
    path = workspace / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    worker = Recording(SCRIPT, (1,) if pause else (1, 2))
    engine = make_engine(workspace, workers=(worker,))
    prepared = prepare(path, given={}, router=engine.router, env=engine.env)
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    if pause:  # no worker serves attempt 2: the run waits, and another process goes on
        assert outcome.status is RunStatus.WAITING
        engine.store.close()
        worker = Recording(SCRIPT, (1, 2))
        engine = make_engine(workspace, workers=(worker,))
        outcome = asyncio.run(engine.resume(outcome.run_id))
    assert outcome.status is RunStatus.SUCCEEDED
    [node] = build_record(engine.store, outcome.run_id)["nodes"]
    assert node["attempts"][0]["error"] == "transient: merge conflict: a.py"
    engine.store.close()
    return worker.requests[-1]


def test_a_retry_after_a_pause_hears_what_a_retry_in_process_hears(tmp_path: Path) -> None:
    live = _second_request(tmp_path / "live", pause=False)
    resumed = _second_request(tmp_path / "resumed", pause=True)
    assert live.attempt == resumed.attempt == 2
    assert live.feedback is not None
    assert (live.feedback.failure_class, live.feedback.summary) == (
        FailureClass.TRANSIENT, "merge conflict: a.py")
    assert resumed.feedback == live.feedback


def test_an_attempt_opens_and_is_served_as_typed_values_in_the_record_s_order() -> None:
    from rein.engine.run.kinds.attempt_end import AttemptServed, AttemptStart

    assert list(AttemptStart(attempt=2, started_at="t", rerun=True).to_record().items()) == [
        ("attempt", 2), ("started_at", "t"), ("x-rein-rerun", True)]
    assert AttemptStart(attempt=1, started_at="t").to_record() == {"attempt": 1,
                                                                    "started_at": "t"}
    served = AttemptServed(usage={"tool_calls": 0}, routed={"provider": "p"},
                           extra={"x-rein-profile": "a", "not-x": 1}).to_record()
    assert list(served) == ["usage", "routed", "x-rein-profile"]  # only x- fields pass
