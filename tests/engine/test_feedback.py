"""What a retried attempt is told about the last one is built in one place, from the run
record's criterion results: a live attempt and one adopted from the store after a pause
give the same words, and evidence a criterion does not record never reaches a prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rein.core.states import RunStatus
from rein.engine.run.record import build_record
from rein.testing import run_graph, scripted_harness
from rein.workers.base import AttemptRequest
from rein.workers.scripted import ScriptedWorker

GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/feedback", "title": "t",
    "objective": "o", "requires_conformance": 3, "entrypoints": ["a"],
    "nodes": {"a": {
        "title": "a", "description": "a.",
        "failure": {"retry": {"max_attempts": 2, "backoff": "none",
                              "retry_on": ["criteria_failed"]}},
        "success": {"criteria": [
            {"id": "private", "kind": "command", "description": "the private check",
             "run": "echo private-$((1000 + 234)); test -f done", "record_evidence": False,
             "severity": "advisory", "timeout_seconds": 30},
            {"id": "public", "kind": "command", "description": "the public check",
             "run": "echo public-detail; test -f done", "timeout_seconds": 30}]}}},
}


class RecordingWorker(ScriptedWorker):
    """The scripted test double, keeping every request it was handed."""

    def __init__(self, script: dict[str, Any]) -> None:
        super().__init__(script)
        self.requests: list[AttemptRequest] = []

    def run(self, request: AttemptRequest) -> Any:  # type: ignore[override]
        self.requests.append(request)
        return super().run(request)


def test_feedback_is_the_recorded_failure_required_first(tmp_path: Path) -> None:
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    worker = RecordingWorker({"nodes": {"a": [{"outputs": {}}, {"outputs": {}}]}})
    with scripted_harness(tmp_path, workers=(worker,)) as harness:
        outcome = run_graph(harness, path)
        record = build_record(harness.store, outcome.run_id)
    assert outcome.status is RunStatus.FAILED
    results = record["nodes"][0]["attempts"][0]["success"]["results"]
    recorded = {r["id"]: r.get("evidence") for r in results}
    feedback = worker.requests[1].feedback
    assert feedback is not None
    assert [dict(c) for c in feedback.failed_criteria] == [
        {"id": "public", "kind": "command", "severity": "required",
         "description": "the public check", "evidence": recorded["public"]},
        {"id": "private", "kind": "command", "severity": "advisory",
         "description": "the private check", "evidence": None},
    ]
    assert "private-1234" not in repr(worker.requests[1])
