"""One vocabulary of answers: a program answers a graph run's gate with the word it answers
a thread's question with (``accept``, ``decline``, ``cancel``), importing nothing of rein's
internals; any other word is refused before anything is recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import rein
from rein.errors import ReinError
from rein.protocol.sdk import DECISIONS
from tests.scenarios.model_env import isolate

GRAPH = """\
ags_version: "1.0"
kind: AgenticGraph
id: example/gate
title: One gate
version: 1.0.0
requires_conformance: 1
objective: Wait for a person.
entrypoints: [approve]
nodes:
  approve:
    type: gate
    title: Approve
    description: A person approves.
    gate:
      mode: approve
      prompt: "Go on?"
      on_reject: fail
"""


def gate_run(root: Path, decision: str) -> tuple[Any, str, str]:
    """Start the graph, answer its gate with ``decision``: (the answer or the error, the
    gate's status after it, the run's status after it)."""
    (root / "gate.agraph.yaml").write_text(GRAPH)

    async def scenario() -> tuple[Any, str, str]:
        with rein.Harness.open(root) as harness:
            prepared = await harness.prepare(root / "gate.agraph.yaml", given={})
            outcome = await harness.start(prepared, approved=prepared.digest)
            [gate] = harness.approvals(run_id=outcome.run_id)
            try:
                answered: Any = await harness.answer(gate.approval_id, decision,
                                                     digest=gate.digest)
            except ReinError as exc:
                answered = exc
            return (answered, harness.approval(gate.approval_id).status,
                    harness.run(outcome.run_id).status)

    return asyncio.run(scenario())


@pytest.mark.parametrize(("decision", "gate", "run"), [
    ("accept", "accepted", "succeeded"), ("decline", "declined", "failed"),
    ("cancel", "cancelled", "cancelled")])
def test_a_gate_is_answered_with_the_words_of_a_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decision: str, gate: str,
        run: str) -> None:
    isolate(tmp_path, monkeypatch)
    answered, status, run_status = gate_run(tmp_path, decision)
    assert not isinstance(answered, ReinError), answered
    assert (status, run_status) == (gate, run)
    assert answered.approval.status == gate


@pytest.mark.parametrize("word", ["accepted", "approve", "acceptForSession", "yes"])
def test_another_word_is_refused_and_nothing_is_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, word: str) -> None:
    isolate(tmp_path, monkeypatch)
    answered, status, run_status = gate_run(tmp_path, word)
    assert isinstance(answered, ReinError)
    assert (answered.code, answered.hint) == ("APPROVAL006", "answer accept, decline or cancel")
    assert (status, run_status) == ("pending", "awaiting_human")


def test_every_surface_takes_the_same_words() -> None:
    from rein.core.states import ANSWERS
    from rein.protocol.feed import AVAILABLE

    assert list(ANSWERS) == ["accept", "decline", "cancel"]
    assert set(DECISIONS) == set(AVAILABLE) == {*ANSWERS, "acceptForSession"}
    assert all(DECISIONS[word] == status for word, status in ANSWERS.items())
    console = pytest.importorskip("rein.web.console", reason="the web extra is not installed")
    assert console.ANSWERS is ANSWERS
