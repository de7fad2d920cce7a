"""The run record and the event log of a few runs, byte for byte.

The engine's internals change (the run's state, its records as typed values); what a run
writes must not. Each run below goes on a fixed clock (every reading a step) with counted
ids, so its record and its events are the same bytes on every machine, and they are
compared (the stored node rows and the event payloads with their fields in the order they
were written) with the ones kept in ``data/record_bytes.json``: a change there is a change of
behaviour, to be named as one. ``python tests/engine/run/test_record_bytes.py`` rewrites the
file after such a change.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from rein.engine.run.record import build_record
from rein.engine.run.runner import prepare
from rein.workers.scripted import ScriptedWorker

if __package__:
    from ..helpers import GRAPHS, make_engine
else:  # run as a script, to rewrite the kept bytes
    sys.path.insert(0, str(Path(__file__).parent.parent))
    from tests.engine.helpers import GRAPHS, make_engine  # type: ignore[no-redef]

KEPT = Path(__file__).parent.parent / "data" / "record_bytes.json"


def _doc(gid: str, nodes: dict[str, Any], entry: list[str]) -> dict[str, Any]:
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": gid, "title": gid,
            "objective": "o", "requires_conformance": 3, "entrypoints": entry, "nodes": nodes}


def _decide(when: str, check: str, attempts: int) -> dict[str, Any]:
    return {"type": "decision", "title": "pick", "description": "pick.",
            "decision": {"question": "?", "evaluator": "expression", "default_branch": "b",
                         "branches": [{"label": "a", "description": "a", "when": when},
                                      {"label": "b", "description": "b", "when": "false"}]},
            "success": {"criteria": [{"id": "ok", "kind": "expression",
                                      "description": "the pick", "expr": check}]},
            "failure": {"retry": {"max_attempts": attempts, "backoff": "none",
                                  "retry_on": ["criteria_failed"]}}}


RUNS: dict[str, tuple[dict[str, Any] | Path, dict[str, Any]]] = {
    # A task that fails with a message, is retried with feedback and succeeds; one after it.
    "retry": (_doc("tests/retry", {
        "a": {"title": "a", "description": "a.", "outputs": {"n": {"type": "integer", "description": "n"}},
              "failure": {"retry": {"max_attempts": 3, "backoff": "none",
                                    "retry_on": ["any"]}}},
        "b": {"title": "b", "description": "b.", "depends_on": ["a"]}}, ["a"]),
        {"nodes": {"a": [{"failure": "transient", "message": "merge conflict: a.py"},
                         {"outputs": {"n": 2}}],
                   "b": [{"outputs": {}}]}}),
    # Expression decisions: one passes its check, one fails it on every attempt.
    "decisions": (_doc("tests/decisions", {
        "good": _decide("true", "self.outputs.decision == 'a'", 1),
        "bad": _decide("true", "self.outputs.decision == 'b'", 2),
        "after": {"title": "after", "description": "after.", "depends_on": ["bad"]}},
        ["good", "bad"]), {"nodes": {"after": [{"outputs": {}}]}}),
    # Decisions, a notify gate, a map, a loop and a subgraph, with no worker.
    "no-worker": (GRAPHS / "no-worker.agraph.yaml", {"nodes": {}}),
}


def _run(workspace: Path, graph: dict[str, Any] | Path, script: dict[str, Any]
         ) -> dict[str, Any]:
    if isinstance(graph, Path):
        path = workspace / graph.name
        shutil.copy(graph, path)
    else:
        path = workspace / "g.agraph.yaml"
        path.write_text(yaml.safe_dump(graph, sort_keys=False))
    engine = make_engine(workspace, workers=(ScriptedWorker(script),))
    prepared = prepare(path, given={}, router=engine.router, env=engine.env)
    outcome = asyncio.run(engine.start(prepared, approved=prepared.digest))
    runs = [outcome.run_id, *(r.run_id for r in engine.store.list_runs()
                              if r.run_id != outcome.run_id)]
    kept = {"exit": outcome.status.value,
            "records": [build_record(engine.store, r) for r in runs],
            "events": [[e.to_json() for e in engine.store.events(r)] for r in runs],
            # The node rows as stored, fields in the order they were written.
            "rows": [[n.record for n in engine.store.nodes(r)] for r in runs]}
    engine.store.close()
    text = json.dumps(kept, ensure_ascii=False).replace(str(workspace), "<workspace>")
    return dict(json.loads(text))


def _all(root: Path) -> dict[str, Any]:
    out = {}
    for name, (graph, script) in RUNS.items():
        (root / name).mkdir()
        out[name] = _run(root / name, graph, script)
    return out


@pytest.mark.parametrize("name", list(RUNS))
def test_a_run_writes_the_bytes_it_always_wrote(tmp_path: Path, name: str) -> None:
    graph, script = RUNS[name]
    got = _run(tmp_path, graph, script)
    kept = json.loads(KEPT.read_text(encoding="utf-8"))[name]
    assert json.dumps(got, ensure_ascii=False, indent=1) == json.dumps(
        kept, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as root:
        KEPT.write_text(json.dumps(_all(Path(root)), ensure_ascii=False, indent=1) + "\n",
                        encoding="utf-8")
