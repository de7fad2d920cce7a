"""``TurnResult.usage``: the tokens the turn's model calls used, summed, in the names
``thread/tokenUsage/updated`` gives them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rein
from tests.appserver.serve import TOML
from tests.scenarios.model_env import isolate


def test_a_turn_result_carries_its_usage(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)
    (tmp_path / "rein.toml").write_text(TOML % "calls")
    (tmp_path / "turns.json").write_text(json.dumps([
        {"message": "thinking", "usage": {"input": 120, "output": 30}},
        {"tool_calls": [{"name": "submit_outputs", "arguments": {"reply": "done"}}],
         "usage": {"input": 200, "output": 10}}]))
    harness = rein.Harness.open(tmp_path)
    try:
        result = harness.start_thread().run_sync("hello")
    finally:
        harness.close()
    assert result.final_response == "done"
    assert result.usage == {"inputTokens": 320, "cachedInputTokens": 0, "outputTokens": 40,
                            "reasoningOutputTokens": 0, "totalTokens": 360}
