"""The fast acceptance may only spare a submit the validator's import, never change a verdict.

``envelope_problems`` lets rein's own check accept an envelope whose ``respond_with`` is made
of rein's own keywords, and asks rein's validator (``jsonschema_rs``, whose words the
refusals quote) about everything else. Checked here against ``jsonschema``, the reference
validator, as an oracle: whatever the envelope, the fast acceptance and the final verdict
agree with it; the envelopes a driver really sends take the fast path; and an output with a
schema of its own always goes to the validator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rein.core.usage import Budget
from rein.workers.base import AttemptRequest, OutputSpec
from rein.workers.driver.protocol import (
    Limits,
    _accepted_fast,
    build_instruction,
    envelope_problems,
)

OUTPUTS = {
    "task": (OutputSpec(name="module", type="file", description="the module",
                        path_hint="greet.py"),
             OutputSpec(name="count", type="integer", description="how many"),
             OutputSpec(name="ratio", type="number", description="a share", required=False),
             OutputSpec(name="tags", type="file_set", description="files", required=False),
             OutputSpec(name="ok", type="boolean", description="done?", required=False)),
    "decision": (OutputSpec(name="reasoning", type="text", description="why"),),
    "judge": (OutputSpec(name="score", type="number", description="0 to 1"),
              OutputSpec(name="reasoning", type="text", description="why")),
}
GOOD_OUTPUTS: dict[str, dict[str, Any]] = {
    "task": {"module": "greet.py", "count": 3, "ratio": 0.5, "tags": ["a.py"], "ok": True},
    "decision": {"reasoning": "ready"},
    "judge": {"score": 0.75, "reasoning": "mostly right"},
}


def instruction(tmp_path: Path, kind: str, outputs: tuple[OutputSpec, ...] | None = None
                ) -> dict[str, Any]:
    req = AttemptRequest(
        run_id="run-1", node_id="n", attempt=1, kind=kind, title="T", brief="B.", inputs={},
        outputs=OUTPUTS[kind] if outputs is None else outputs, permissions=(), tools=(),
        workspace=str(tmp_path),
        branches=({"label": "ship", "description": ""}, {"label": "hold", "description": ""})
        if kind == "decision" else (),
        budget=Budget(max_agent_steps=5, max_wall_clock_seconds=60))
    return build_instruction(req, token="drv-t", limits=Limits())


def good(ins: dict[str, Any]) -> dict[str, Any]:
    envelope = {**ins["example"], "outputs": dict(GOOD_OUTPUTS[ins["kind"]]),
                "context_usage": {"used_tokens": 10, "window_tokens": 100},
                "agent": {"name": "claude-code", "model": "m"}}
    if ins["kind"] == "decision":
        envelope["decision"] = "ship"
    return envelope


def reference_accepts(envelope: Any, ins: dict[str, Any]) -> bool:
    return not list(jsonschema.Draft202012Validator(ins["respond_with"]).iter_errors(envelope))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10 ** 30), max_value=10 ** 30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
    | st.sampled_from(["done", "failed", "drv-t", "n", "rein.driver/1", "ship", "greet.py"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                  max_size=3),
    max_leaves=6)
FIELDS = ["protocol", "token", "node", "attempt", "status", "outputs", "message", "decision",
          "context_usage", "agent", "extra", "outputs/module", "outputs/count",
          "outputs/ratio", "outputs/tags", "outputs/ok", "outputs/score", "outputs/reasoning",
          "outputs/other", "context_usage/used_tokens", "agent/name"]
DELETE = object()


def mutated(envelope: dict[str, Any], changes: list[tuple[str, Any]]) -> dict[str, Any]:
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in envelope.items()}
    for path, value in changes:
        *parents, leaf = path.split("/")
        target: Any = out
        for part in parents:
            target = target.get(part) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            continue
        if value is DELETE:
            target.pop(leaf, None)
        else:
            target[leaf] = value
    return out


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(OUTPUTS)),
       changes=st.lists(st.tuples(st.sampled_from(FIELDS), JSON | st.just(DELETE)),
                        max_size=3))
def test_the_fast_acceptance_never_disagrees_with_the_reference(
        tmp_path: Path, kind: str, changes: list[tuple[str, Any]]) -> None:
    ins = instruction(tmp_path, kind)
    envelope = mutated(good(ins), changes)
    if _accepted_fast(envelope, ins):
        assert reference_accepts(envelope, ins), envelope
    # And the verdict the caller sees is the reference's, fast path or not.
    problems = envelope_problems(envelope, ins)
    if not problems and envelope.get("token") == "drv-t":
        assert reference_accepts(envelope, ins), envelope


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_the_envelopes_a_driver_sends_take_the_fast_path(tmp_path: Path, kind: str) -> None:
    ins = instruction(tmp_path, kind)
    for envelope in (good(ins), {**good(ins), "status": "failed", "message": "no"},
                     {k: v for k, v in good(ins).items() if k not in ("agent", "protocol")}):
        assert _accepted_fast(envelope, ins) and reference_accepts(envelope, ins)
        assert envelope_problems(envelope, ins) == []


def test_a_wrong_envelope_is_refused_in_the_validators_words(tmp_path: Path) -> None:
    ins = instruction(tmp_path, "task")
    envelope = {**good(ins), "context_usage": {"used_tokens": -1, "window_tokens": 100}}
    assert not _accepted_fast(envelope, ins)
    assert envelope_problems(envelope, ins) == [
        "context_usage/used_tokens: -1 is less than the minimum of 0"]


def test_an_output_with_its_own_schema_always_goes_to_the_validator(tmp_path: Path) -> None:
    declared = (OutputSpec(name="report", type="object", description="r",
                           schema={"type": "object", "required": ["lines"]}),)
    ins = instruction(tmp_path, "task", outputs=declared)
    envelope = {**ins["example"], "outputs": {"report": {"lines": 3}}}
    assert not _accepted_fast(envelope, ins)  # whatever rein's own check would say
    assert envelope_problems(envelope, ins) == []
    assert envelope_problems({**envelope, "outputs": {"report": {}}}, ins) == [
        'outputs/report: missing the required field(s) "lines"']
