"""Runs started from the console advance at the same time: the first run cannot reach its
gate until the second has done its work, so both reach their gates only if neither waits
for the other to pause. And one run's jobs still go one after another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.web.conftest import make_console, write_graph


def _graph(name: str, check: str) -> dict[str, Any]:
    return {
        "ags_version": "1.0", "kind": "AgenticGraph", "id": f"tests/web-{name}",
        "title": name, "objective": "test", "requires_conformance": 3,
        "entrypoints": [name],
        "nodes": {
            name: {"title": name, "description": "Do it.", "success": {"criteria": [
                {"id": "done", "kind": "command", "description": "the check",
                 "run": check, "timeout_seconds": 120}]}},
            "ok": {"type": "gate", "title": "ok", "description": "Approve.",
                   "depends_on": [name], "gate": {"mode": "approve", "prompt": "Go?"}},
        },
    }


def test_two_runs_started_from_the_page_both_reach_their_gates(workspace: Path) -> None:
    flag = workspace / "marked.flag"
    # "wait" succeeds once "mark" has run; it gives up after a minute (a bound, not a
    # pause: it ends as soon as the flag exists).
    write_graph(workspace, "a.agraph.yaml", _graph(
        "wait", f"for i in $(seq 600); do test -f {flag} && exit 0; sleep 0.1; done; exit 1"))
    write_graph(workspace, "b.agraph.yaml", _graph("mark", f"touch {flag}"))
    (workspace / "answers.yaml").write_text(yaml.safe_dump(
        {"nodes": {"wait": [{"outputs": {}}], "mark": [{"outputs": {}}]}}))
    for console in make_console(workspace):
        console.login()
        started = []
        for name in ("a.agraph.yaml", "b.agraph.yaml"):
            r = console.post("/plan/run", {"path": name, "digest": console.digest(name)})
            assert r.status_code == 303, r.text
            started.append(str(r.headers["location"]).rsplit("/", 1)[-1])
        assert console.steering is not None and console.steering.idle(180)
        statuses = {console.harness.run(r).graph_id: console.harness.run(r).status.value
                    for r in started}
        assert statuses == {"tests/web-wait": "awaiting_human",
                            "tests/web-mark": "awaiting_human"}
        assert console.steering.failures == []


def test_a_runs_jobs_go_to_the_lane_that_advances_it(workspace: Path) -> None:
    for console in make_console(workspace):
        console.login()
        run_id = console.start("g.agraph.yaml")
        steering = console.steering
        assert steering is not None
        (row,) = console.pending()
        r = console.post(f"/approvals/{row.approval_id}",
                         {"action": "accept", "digest": row.digest})
        assert r.status_code == 303
        assert steering.idle(60)
        assert console.harness.run(run_id).status.value == "awaiting_human"
        assert len(steering._lanes) == 1  # nothing ran beside it: one lane was enough
