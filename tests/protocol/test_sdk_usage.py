"""``TurnResult.usage``: the tokens the turn's model calls used, summed, in the names
``thread/tokenUsage/updated`` gives them; None when no model call reported its tokens, and
a count rein does not know is None, never 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rein
from rein.protocol.feed import Feed
from rein.protocol.sdk import TurnResult
from rein.store.base import Event, ThreadTurnRow
from tests.appserver.serve import TOML
from tests.scenarios.model_env import isolate


def turn_result(root: Path, turns: list[object]) -> TurnResult:
    (root / "rein.toml").write_text(TOML % "calls")
    (root / "turns.json").write_text(json.dumps(turns))
    harness = rein.Harness.open(root)
    try:
        return harness.start_thread().run_sync("hello")
    finally:
        harness.close()


def test_a_turn_result_carries_its_usage(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)
    result = turn_result(tmp_path, [
        {"message": "thinking", "usage": {"input": 120, "output": 30}},
        {"tool_calls": [{"name": "submit_outputs", "arguments": {"reply": "done"}}],
         "usage": {"input": 200, "output": 10}}])
    assert result.final_response == "done"
    # Cached input and reasoning output are not recorded: unknown, not 0.
    assert result.usage == {"inputTokens": 320, "cachedInputTokens": None, "outputTokens": 40,
                            "reasoningOutputTokens": None, "totalTokens": 360}


def test_a_turn_no_model_call_answered_has_no_usage(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)
    result = turn_result(tmp_path, [])  # the script has no turn: the first call fails
    assert result.status == "failed"
    assert result.usage is None


def test_a_count_a_model_call_did_not_report_is_unknown() -> None:
    feed = Feed.of(ThreadTurnRow(thread_id="t", seq=1, turn_id="turn-1", input={"items": []},
                                 created_at="2026-01-01T00:00:00Z"), cwd="/")

    def used(**data: object) -> Event:
        return Event(run_id="run-1", seq=1, type="item", at="2026-01-01T00:00:01Z",
                     payload={"kind": "usage", "data": {"model": "m", **data}})

    assert feed.usage() is None
    feed.apply(used(input_tokens=100, output_tokens=5))
    assert feed.usage() == {"inputTokens": 100, "cachedInputTokens": None,
                            "outputTokens": 5, "reasoningOutputTokens": None,
                            "totalTokens": 105}
    feed.apply(used(input_tokens=None, output_tokens=7))  # a vendor that gave no input count
    assert feed.usage() == {"inputTokens": None, "cachedInputTokens": None,
                            "outputTokens": 12, "reasoningOutputTokens": None,
                            "totalTokens": None}


def test_a_model_call_that_reported_no_tokens_sends_no_usage_notification() -> None:
    # zeros on the wire would read as an empty context (ACP's usage_update ``used``)
    feed = Feed.of(ThreadTurnRow(thread_id="t", seq=1, turn_id="turn-1", input={"items": []},
                                 created_at="2026-01-01T00:00:00Z"), cwd="/")
    unreported = Event(run_id="run-1", seq=1, type="item", at="2026-01-01T00:00:01Z",
                       payload={"kind": "usage", "data": {"model": "m", "input_tokens": None,
                                                          "output_tokens": None}})
    assert [m.method for m in feed.apply(unreported)] == []
    assert feed.usage() is None

