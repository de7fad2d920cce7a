"""``policy.resume`` when a failed run is resumed: keep it, re-run failures, or restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.durability.support import finished_counts, record, rein, runs, write_graph


def _graph(policy: str | None) -> dict[str, Any]:
    graph: dict[str, Any] = {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/resume-policy",
        "title": "resume policy", "objective": "o", "requires_conformance": 3,
        "entrypoints": ["a"],
        "nodes": {
            "a": {"title": "a", "description": "a.",
                  "requirements": {"workspace": "read_write", "permissions": ["fs:write:a.txt"]},
                  "success": {"criteria": [{"id": "ok", "kind": "command",
                                            "description": "a.txt exists",
                                            "run": "test -f a.txt"}]}},
            "b": {"title": "b", "description": "b.", "depends_on": ["a"],
                  "success": {"criteria": [{"id": "ok", "kind": "command",
                                            "description": "flag exists",
                                            "run": "test -f flag"}]}},
        },
    }
    if policy:
        graph["policy"] = {"resume": policy}
    return graph


ANSWERS = {"nodes": {"a": [{"outputs": {}, "files": {"a.txt": "a"}}], "b": [{"outputs": {}}]}}


def _failed_run(workspace: Path, policy: str | None) -> str:
    digest = write_graph(workspace, _graph(policy), ANSWERS)
    assert rein(workspace, "run", "g.agraph.yaml", "--approve", digest).returncode == 1
    [row] = runs(workspace)
    assert row["status"] == "failed"
    (workspace / "flag").write_text("now b can pass")
    return row["run_id"]


@pytest.mark.parametrize("policy", [None, "resume_incomplete"])
def test_resume_incomplete_keeps_a_failed_run_as_it_ended(tmp_path: Path,
                                                          policy: str | None) -> None:
    run_id = _failed_run(tmp_path, policy)
    assert rein(tmp_path, "resume", run_id).returncode == 1
    assert runs(tmp_path)[0]["status"] == "failed"


def test_resume_failed_runs_failed_nodes_again_and_adopts_succeeded_ones(tmp_path: Path
                                                                         ) -> None:
    run_id = _failed_run(tmp_path, "resume_failed")
    done = rein(tmp_path, "resume", run_id)
    assert done.returncode == 0, done.stderr
    got = record(tmp_path, run_id)
    assert got["status"] == "succeeded"
    assert finished_counts(tmp_path, run_id) == {"a": 1, "b": 2}  # a adopted, b run again
    [b] = [n for n in got["nodes"] if n["node_id"] == "b"]
    assert [a["status"] for a in b["attempts"]] == ["succeeded"]


def test_restart_starts_a_new_run_under_the_same_approval(tmp_path: Path) -> None:
    run_id = _failed_run(tmp_path, "restart")
    done = rein(tmp_path, "resume", run_id, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["run_id"] != run_id and summary["status"] == "succeeded"
    statuses = {r["run_id"]: r["status"] for r in runs(tmp_path)}
    assert statuses == {run_id: "cancelled", summary["run_id"]: "succeeded"}
    fresh = record(tmp_path, summary["run_id"])
    assert finished_counts(tmp_path, summary["run_id"]) == {"a": 1, "b": 1}
    assert fresh["metadata"]["x-rein-approved-digest"] == fresh["graph_digest"]
