"""A node's criteria may name its own outputs as ``nodes.<own id>.outputs``, as ``self`` does."""

from __future__ import annotations

from pathlib import Path

from rein.core.states import RunStatus
from tests.engine.test_semantics import go, graph, task


def _checked(criteria: list[dict[str, object]]) -> dict[str, object]:
    return graph({"reply": task("reply", outputs={"text": {"type": "string", "description": "The reply."}},
                                success={"criteria": criteria})}, ["reply"])


def test_regex_target_reads_the_node_s_own_output_by_id(tmp_path: Path) -> None:
    data = _checked([{"id": "heading", "kind": "regex", "description": "starts with # Bug",
                      "target": "nodes.reply.outputs.text", "pattern": "^# Bug"}])
    outcome, record = go(tmp_path, data, {"reply": [{"outputs": {"text": "# Bug\nThanks."}}]})
    assert outcome.status is RunStatus.SUCCEEDED, record["nodes"]


def _long_enough() -> dict[str, object]:
    return _checked([{"id": "long", "kind": "expression", "description": "long enough",
                      "expr": "len(nodes.reply.outputs.text) > 5"}])


def test_expression_reads_own_output_by_id(tmp_path: Path) -> None:
    outcome, _ = go(tmp_path, _long_enough(), {"reply": [{"outputs": {"text": "hello there"}}]})
    assert outcome.status is RunStatus.SUCCEEDED


def test_expression_on_own_output_still_fails_on_a_wrong_value(tmp_path: Path) -> None:
    outcome, record = go(tmp_path, _long_enough(), {"reply": [{"outputs": {"text": "hi"}}]})
    assert outcome.status is RunStatus.FAILED
    [attempt] = record["nodes"][0]["attempts"]
    assert attempt["status"] == "criteria_failed"
