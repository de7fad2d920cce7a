"""Typed node specs: the AGS defaults (App. A) applied once, read by the plan and the
engine alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT

from rein.engine.run.graph import scope_model
from rein.formats.ags.plan import plan_path
from rein.formats.ags.spec import FailureSpec, NodeSpec, RetrySpec, node_spec
from rein.formats.loader import load_path

EXAMPLES = sorted((ROOT / "examples").glob("*.agraph.yaml"))


def test_an_empty_node_gets_the_app_a_defaults() -> None:
    spec = node_spec("n", {})
    assert spec == NodeSpec(id="n", raw={})
    assert spec.failure.retry == RetrySpec(
        max_attempts=1, retry_on=frozenset({"transient", "tool_error", "criteria_failed"}),
        feedback="failed_criteria", backoff="exponential", initial_delay_seconds=2.0,
        max_delay_seconds=60.0, jitter=True, escalate_intelligence=False)
    assert spec.failure.on_exhausted == "fail" and spec.failure.compensation is None
    assert (spec.success.mode, spec.success.criteria) == ("all", ())
    assert (spec.requirements.network, spec.requirements.workspace) == ("none", "read_only")


def test_a_gate_asks_once_whatever_its_retry_says() -> None:
    block = {"retry": {"max_attempts": 4}, "on_exhausted": "skip", "compensation": "undo"}
    assert node_spec("g", {"type": "gate", "failure": block}).attempts == 1
    task = node_spec("t", {"failure": block})
    assert task.attempts == 4
    assert task.failure == FailureSpec(retry=RetrySpec(max_attempts=4), on_exhausted="skip",
                                       compensation="undo")


def test_retry_on_any_matches_every_class_until_the_last_attempt() -> None:
    retry = RetrySpec(max_attempts=2, retry_on=frozenset({"any"}))
    assert retry.retries("provider_error", 1) and not retry.retries("provider_error", 2)
    assert not RetrySpec(max_attempts=3).retries("permission_denied", 1)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_plan_and_the_engine_read_the_same_spec(path: Path) -> None:
    plan = plan_path(path)
    model = scope_model(load_path(path).data)
    for node in plan.root.nodes:
        spec = model.specs[node.id]
        assert (node.attempts, node.on_exhausted, node.compensation, node.fallback) == (
            spec.attempts, spec.failure.on_exhausted, spec.failure.compensation,
            spec.failure.strategies)
