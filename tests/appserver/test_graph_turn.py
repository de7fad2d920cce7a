"""A graph turn driven by the openai-codex SDK: the plan as an item, the digest approval as
a question, node states as plan steps, a gate answered through the protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rein.store.sqlite import SQLiteStore
from tests.appserver.codex_env import Recorded, client, off_schema, turn_notifications
from tests.appserver.serve import reply, workspace
from tests.appserver.test_codex_sdk import check_request

GRAPH = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "rein/tests/gated", "title": "gated",
    "version": "1.0.0", "requires_conformance": 1, "objective": "Ask, then answer.",
    "entrypoints": ["ship_gate"],
    "nodes": {
        "ship_gate": {"type": "gate", "title": "Ship it?", "description": "A person approves.",
                      "gate": {"mode": "approve", "prompt": "Ship the release?"}},
        "announce": {"type": "task", "title": "Announce", "description": "Say it shipped.",
                     "depends_on": ["ship_gate"], "intelligence": {"tier": "standard"},
                     "outputs": {"reply": {"type": "string", "description": "the answer"}},
                     "requirements": {"tools": [], "permissions": [],
                                      "workspace": "read_only"}}},
}
MENTION = [{"type": "mention", "name": "gated", "path": "gated.agraph.yaml"}]


def answer(choice: str) -> dict[str, Any]:
    return {"answers": {"digest": {"answers": [choice]}}}


def test_a_graph_turn_asks_for_the_digest_then_stops_at_the_gate(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("shipped")])
    (root / "gated.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    asked: list[dict[str, Any]] = []

    def decide(method: str, params: dict[str, Any]) -> dict[str, Any]:
        question = params["questions"][0]
        asked.append(question)
        result = {"answers": {question["id"]: {"answers": ["accept"]}}}
        check_request(method, params, result)
        return result

    seen = Recorded()
    with client(root, decide, seen) as c:
        c.initialize()
        thread = c.thread_start({}).thread.id
        turn = c.turn_start(thread, MENTION).turn.id
        notes = list(turn_notifications(c, turn))

    assert seen.unknown() == []
    assert off_schema(seen) == []
    assert [m for m, _ in seen.requests] == ["item/tool/requestUserInput"] * 2
    digest_q, gate_q = asked
    assert "rein/tests/gated" in digest_q["question"] and "sha256-" in digest_q["question"]
    assert gate_q["question"] == "Ship the release?"
    plans = [[(s.step, s.status.value) for s in n.payload.plan]
             for n in notes if n.method == "turn/plan/updated"]
    assert plans[0] == [("ship_gate", "pending"), ("announce", "pending")]
    assert plans[-1] == [("ship_gate", "completed"), ("announce", "completed")]
    assert [("ship_gate", "inProgress"), ("announce", "pending")] in plans
    completed = [n.payload.item.root for n in notes if n.method == "item/completed"]
    assert [i.type for i in completed] == ["userMessage", "plan", "agentMessage"]
    assert "ship_gate" in completed[1].text
    assert completed[2].text.startswith("run run-") and completed[2].text.endswith(
        " succeeded")
    assert notes[-1].payload.turn.status.value == "completed"


def test_a_declined_digest_runs_nothing(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    (root / "gated.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    seen = Recorded()
    with client(root, lambda m, p: answer("decline"), seen) as c:
        c.initialize()
        thread = c.thread_start({}).thread.id
        turn = c.turn_start(thread, MENTION).turn.id
        notes = list(turn_notifications(c, turn))
    assert seen.unknown() == []
    assert off_schema(seen) == []
    assert notes[-1].payload.turn.status.value == "completed"
    final = [n.payload.item.root for n in notes if n.method == "item/completed"][-1]
    assert final.text == "the graph was not approved (decline); nothing ran"
    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        assert store.list_runs() == []  # nothing ran
    finally:
        store.close()
