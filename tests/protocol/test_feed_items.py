"""The feed's fold of single events into Codex items, checked against the official SDK's
own models when it is installed: a compaction, a steering input."""

from __future__ import annotations

from typing import Any

import pytest

from rein.protocol.feed import Feed
from rein.store.base import Event


def _event(type_: str, payload: dict[str, Any]) -> Event:
    return Event(run_id="run-1", seq=1, type=type_, at="2030-01-01T00:00:00+00:00",
                 payload=payload)


def _feed() -> Feed:
    return Feed(thread_id="thr-1", turn_id="turn-1", cwd="/w", input=[])


def test_a_compaction_is_a_context_compaction_item() -> None:
    started, completed = _feed().apply(_event("item", {
        "node": "turn", "attempt": 1, "kind": "context_compaction",
        "data": {"index": 1, "summary": "s", "replaced": []}}))
    assert (started.method, completed.method) == ("item/started", "item/completed")
    assert completed.params["item"] == {"type": "contextCompaction",
                                        "id": "turn-1:compaction-1"}
    registry = pytest.importorskip("openai_codex.generated.notification_registry")
    model = registry.NOTIFICATION_MODELS["item/completed"]
    assert model.model_validate(completed.params).item.root.type == "contextCompaction"


def test_a_steering_input_is_a_user_message_of_its_own() -> None:
    feed = _feed()
    given = [{"type": "text", "text": "and wave"}]
    started, completed = feed.apply(_event("input/steered", {
        "node": "turn", "turn": "turn-1", "text": "and wave", "input": given}))
    assert started.method == "item/started"
    assert completed.params["item"] == {"type": "userMessage", "id": "turn-1:user-2",
                                        "content": given}
    assert feed.steered == ["and wave"]
