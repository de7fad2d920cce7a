"""A tool call in ``ask`` on a real ``rein worker`` pauses the run in the store's approval
queue on a real PostgreSQL server; ``rein approvals accept`` continues the same attempt on a
worker, which then makes the call.

The in-process half of this path, with the queue replaced by a stand-in, is in
``test_remote_pause.py``; here every part is a real process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.executors.cluster import Cluster
from tests.executors.test_two_workers import last_summary

pytestmark = pytest.mark.timeout(900)

# The scripted provider picks its turn by the conversation's length, so a worker that
# continues the attempt from its saved state answers with the turn that comes next.
TOML = ('[providers.script]\nkind = "scripted"\n'
        'options = { script = "turns.json", position = "conversation" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "s"\n\n'
        '[policy]\nedit = "ask"\n')
TURNS = [{"tool_calls": [{"name": "file_write",
                          "arguments": {"path": "NOTE.md", "content": "written remotely\n"}}],
          "usage": {"input": 100, "output": 10}},
         {"tool_calls": [{"name": "submit_outputs", "arguments": {"summary": "finished"}}],
          "usage": {"input": 120, "output": 10}}]
GRAPH = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "scale/ask",
         "title": "remote ask", "objective": "write a note once a person said yes",
         "requires_conformance": 1, "entrypoints": ["write"],
         "nodes": {"write": {
             "type": "task", "title": "write the note", "description": "Write NOTE.md.",
             "outputs": {"summary": {"type": "string", "description": "what was done"}},
             "intelligence": {"tier": "standard"},
             "requirements": {"tools": ["file_write"], "permissions": ["fs:write:NOTE.md"],
                              "workspace": "read_write"}}}}


def done(proc: Any) -> subprocess.CompletedProcess[str]:
    assert isinstance(proc, subprocess.CompletedProcess)
    return proc


def items(out: str, kind: str) -> list[dict[str, Any]]:
    """The data of the worker items of ``kind`` in the event stream of ``--json``."""
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [e["payload"]["data"] for e in events
            if e.get("type") == "item" and e["payload"]["kind"] == kind]


def attempt_workflows(c: Cluster, run_id: str) -> list[tuple[str, str, str]]:
    """The run's attempt workflows: id, status and the worker that ran each."""
    rows = c.query("SELECT workflow_uuid, status, executor_id FROM dbos.workflow_status "
                   "WHERE name = 'rein_attempt' AND workflow_uuid LIKE %s "
                   "ORDER BY created_at", f"{run_id}/%")
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


def test_a_call_in_ask_on_a_worker_waits_in_the_store_then_continues(
        tmp_path: Path, db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url)
    (c.ws / "rein.toml").write_text(TOML)
    (c.ws / "turns.json").write_text(json.dumps(TURNS))
    graph = c.ws / "ask.agraph.yaml"
    graph.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    note = c.ws / "NOTE.md"
    try:
        c.worker("w1")
        c.workers_ready("w1")
        digest = done(c.rein("graph", "digest", str(graph), executor=False, where=False))
        assert digest.returncode == 0, digest
        first = done(c.rein("run", str(graph), "--approve", digest.stdout.strip(), "--json"))
        assert first.returncode == 3, first.stdout[-2000:] + first.stderr + c.logs()
        summary = last_summary(first.stdout)
        run_id = summary["run_id"]
        assert summary["status"] == "awaiting_human"
        assert not note.exists()  # nothing was written before a person answered
        paused = attempt_workflows(c, run_id)
        assert paused == [(f"{run_id}/write#1", "SUCCESS", "w1")]

        listed = done(c.rein("approvals", "list", "--json", executor=False))
        assert listed.returncode == 0, listed
        [pending] = json.loads(listed.stdout)["approvals"]
        assert pending["kind"] == "tool_call"
        assert pending["request"]["tool"] == "file_write"
        assert pending["request"]["node"] == "write"

        accepted = done(c.rein("approvals", "accept", pending["approval_id"], "--json"))
        assert accepted.returncode == 0, accepted.stdout[-2000:] + accepted.stderr + c.logs()
        nodes = c.node_rows(run_id)
        workflows = attempt_workflows(c, run_id)
        left = done(c.rein("approvals", "list", "--json", executor=False))
    finally:
        c.stop()
    assert last_summary(accepted.stdout)["status"] == "succeeded"
    assert note.read_text() == "written remotely\n"
    # Continued from the saved conversation: the model's first turn was not asked again.
    assert [i for i in items(accepted.stdout, "notice") if i.get("resumed")]
    assert [u["input_tokens"] for u in items(accepted.stdout, "usage")] == [120]
    assert items(accepted.stdout, "tool_result")[0]["content"] == "created NOTE.md (17 bytes)"
    node = nodes["write"]
    assert node["status"] == "succeeded" and node["outputs"] == {"summary": "finished"}
    # The same attempt, continued: one attempt, number 1, run on the worker both times.
    [attempt] = node["attempts"]
    assert attempt["attempt"] == 1 and attempt["status"] == "succeeded"
    assert attempt["x-rein-placement"]["worker"] == "w1"
    # The continuation is a workflow of its own, of the same attempt (``#1~<digest>``).
    assert len(workflows) == 2 and workflows[0] == paused[0]
    assert workflows[1][0].startswith(f"{run_id}/write#1~")
    assert workflows[1][1:] == ("SUCCESS", "w1")
    assert json.loads(left.stdout)["approvals"] == []
