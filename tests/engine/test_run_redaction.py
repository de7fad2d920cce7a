"""A run keeps no known secret: not a REIN_SECRET_ value, not a provider key a node's
``requirements.environment`` hands over, wherever a worker or a criterion puts it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from rein.core.states import RunStatus
from rein.engine.run.clock import CounterIds, StepClock
from rein.engine.run.record import build_record
from rein.engine.run.runner import Engine, prepare
from rein.store.sqlite import SQLiteStore
from rein.workers.scripted import ScriptedWorker

KEY = "sk-proj-EngineLeak-0123456789"
TOKEN = "ghp_EngineLeak0123456789abcd"
ENV = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "REIN_SECRET_DEPLOY": TOKEN}

GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/redaction", "title": "t",
    "objective": "o", "requires_conformance": 3, "entrypoints": ["a"],
    "secrets": [{"name": "deploy", "description": "the deploy token"}],
    "nodes": {"a": {
        "title": "a", "description": "a.",
        "outputs": {"note": {"type": "string", "description": "what was done"}},
        "requirements": {"environment": ["OPENAI_API_KEY"], "secrets": ["deploy"]},
        "failure": {"retry": {"max_attempts": 2, "backoff": "none",
                              "retry_on": ["criteria_failed"],
                              "feedback": "failed_criteria"}},
        "success": {"criteria": [{"id": "echo", "kind": "command",
                                  "description": "prints the key and the token",
                                  "run": 'echo "key=$OPENAI_API_KEY token=$deploy"; '
                                         'test -f done',
                                  "timeout_seconds": 30}]}}},
}


class RecordingWorker(ScriptedWorker):
    """The scripted double, keeping every request it was handed."""

    def __init__(self, script: dict) -> None:
        super().__init__(script)
        self.requests: list = []

    def run(self, request):  # type: ignore[no-untyped-def]
        self.requests.append(request)
        return super().run(request)


def test_secrets_reach_neither_events_records_nor_feedback(tmp_path: Path) -> None:
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    worker = RecordingWorker({"nodes": {"a": [
        {"outputs": {"note": f"used {KEY}"}, "message": f"token {TOKEN}"},
        {"outputs": {"note": f"again {KEY}"}}]}})
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    engine = Engine(workspace=tmp_path, store=store, workers=(worker,), clock=StepClock(),
                    ids=CounterIds(), env=ENV)
    prepared = prepare(path, given={}, env=ENV)
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    assert outcome.status is RunStatus.FAILED  # the criterion never passes: two attempts
    record = build_record(store, outcome.run_id)
    raw = "\n".join(repr(store._x(f"SELECT * FROM {t}").fetchall())
                    for t in ("runs", "events", "nodes", "approvals", "driver_turns"))
    for text in (repr(record), raw):
        assert KEY not in text and TOKEN not in text
    [node] = record["nodes"]
    evidence = node["attempts"][0]["success"]["results"][0]["evidence"]
    assert "key=[secret" in str(evidence) and "token=[secret" in str(evidence)
    assert "used [secret:OPENAI_API_KEY]" in raw and "token [secret:deploy]" in raw
    # The failed criterion's evidence fed to the second attempt is redacted too.
    feedback = worker.requests[1].feedback
    assert feedback is not None and "key=[secret" in repr(feedback.failed_criteria)
    assert KEY not in repr(feedback) and TOKEN not in repr(feedback)
    store.close()


def test_a_secret_in_one_nodes_outputs_never_reaches_the_next_nodes_inputs(
        tmp_path: Path) -> None:
    doc = {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/flow", "title": "t",
        "objective": "o", "requires_conformance": 3, "entrypoints": ["a"],
        "nodes": {
            "a": {"title": "a", "description": "a.",
                  "outputs": {"note": {"type": "string", "description": "n"}}},
            "b": {"title": "b", "description": "b.", "depends_on": ["a"],
                  "inputs": {"note": {"type": "string", "description": "n",
                                      "from": "nodes.a.outputs.note"}}}}}
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    worker = RecordingWorker({"nodes": {"a": [{"outputs": {"note": f"key {KEY}"},
                                               "message": f"done with {TOKEN}"}],
                                        "b": [{"outputs": {}}]}})
    store = SQLiteStore.open(tmp_path)
    assert store is not None
    engine = Engine(workspace=tmp_path, store=store, workers=(worker,), clock=StepClock(),
                    ids=CounterIds(), env=ENV)
    prepared = prepare(path, given={}, env=ENV)
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    assert outcome.status is RunStatus.SUCCEEDED
    [b] = [r for r in worker.requests if r.node_id == "b"]
    assert dict(b.inputs) == {"note": "key [secret:OPENAI_API_KEY]"}
    store.close()
