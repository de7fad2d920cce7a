"""A review gate's edits and an input gate's values, answered over the wire: each value
the gate takes is a free-text question after the decision, and becomes the gate's output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rein.store.sqlite import SQLiteStore
from tests.appserver.codex_env import Recorded, client, off_schema, turn_notifications
from tests.appserver.serve import workspace
from tests.appserver.test_codex_sdk import check_request

GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "rein/tests/review",
    "title": "review", "version": "1.0.0", "requires_conformance": 1,
    "objective": "A person reviews a title and names an owner.",
    "params": {"title": {"type": "string", "description": "the title",
                         "default": "Release 1.0"}},
    "entrypoints": ["title_review"],
    "nodes": {
        "title_review": {
            "type": "gate", "title": "Review the title", "description": "Edit it if needed.",
            "outputs": {"title": {"type": "string", "description": "the title as approved"}},
            "gate": {"mode": "review", "prompt": "Check the title", "present": ["params.title"]}},
        "owner": {
            "type": "gate", "title": "Name the owner", "description": "Who ships it.",
            "depends_on": ["title_review"],
            "gate": {"mode": "input", "prompt": "Who owns it?",
                     "collect": {"owner": {"type": "string",
                                           "description": "who ships it"}}}}},
}


def test_review_edits_and_input_values_over_the_wire(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    (root / "review.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    asked: list[list[dict[str, Any]]] = []

    def decide(method: str, params: dict[str, Any]) -> dict[str, Any]:
        questions = params["questions"]
        asked.append(questions)
        answers: dict[str, Any] = {questions[0]["id"]: {"answers": ["accept"]}}
        for q in questions[1:]:
            answers[q["id"]] = {"answers": {"value:title": ["Release 1.0.1"],
                                            "value:owner": ["ana"]}[q["id"]]}
        result = {"answers": answers}
        check_request(method, params, result)  # against Codex 0.163.0's schema
        return result

    seen = Recorded()
    with client(root, decide, seen) as c:
        c.initialize()
        thread = c.thread_start({}).thread.id
        turn = c.turn_start(thread, [{"type": "mention", "name": "review",
                                      "path": "review.agraph.yaml"}]).turn.id
        notes = list(turn_notifications(c, turn))
    assert seen.unknown() == [] and off_schema(seen) == []
    assert notes[-1].payload.turn.status.value == "completed"
    digest_q, review_q, input_q = asked
    assert len(digest_q) == 1  # the digest question takes no values
    assert [(q["id"], q["isOther"]) for q in review_q[1:]] == [("value:title", True)]
    assert "Release 1.0" in review_q[1]["question"]  # what is shown, kept when left empty
    assert [q["id"] for q in input_q[1:]] == ["value:owner"]

    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        [turn_row] = store.thread_turns(thread)
        assert turn_row.run_id is not None
        review = store.node(turn_row.run_id, "title_review")
        owner = store.node(turn_row.run_id, "owner")
    finally:
        store.close()
    assert review is not None and review.record["outputs"]["title"] == "Release 1.0.1"
    assert owner is not None and owner.record["outputs"]["owner"] == "ana"
