"""A fork taken while a graph turn's digest question waits: the question stays the
original thread's (answering it starts one run, there), and the fork's copy of the turn
reads as interrupted, since nothing runs in the fork."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

import rein
from rein.protocol import ServerRequest
from tests.scenarios.model_env import isolate

GRAPH = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "rein/tests/one",
         "title": "one", "version": "1.0.0", "requires_conformance": 1,
         "objective": "Say it is fine.", "entrypoints": ["note"], "nodes": {"note": {
             "type": "gate", "title": "Noted", "description": "Nothing to wait for.",
             "gate": {"mode": "notify", "prompt": "fine"}}}}


@pytest.fixture(name="root")
def root_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate(tmp_path, monkeypatch)
    (tmp_path / "one.agraph.yaml").write_text(yaml.safe_dump(GRAPH))
    return tmp_path


def test_a_fork_leaves_the_open_digest_question_to_the_original(root: Path) -> None:
    mention = [{"type": "mention", "name": "one", "path": "one.agraph.yaml"}]

    async def scenario() -> tuple[str, str, list[str], int]:
        with rein.Harness.open(root) as harness:
            thread = harness.start_thread()
            turn = await thread.run(mention)
            async for message in turn.stream():
                if isinstance(message, ServerRequest):
                    fork = thread.fork()  # while the question waits
                    [copy] = fork.turns()
                    assert copy["status"] == "interrupted"
                    assert harness.sessions.reopen(fork.id) is None  # nothing to resume
                    await turn.answer(message.id, "accept")
            [original] = thread.turns()
            [copy] = fork.turns()
            return original["status"], copy["status"], [
                r.graph_id for r in harness.store.list_runs()], len(fork.turns())

    original, copy, runs, count = asyncio.run(scenario())
    assert original == "completed" and copy == "interrupted" and count == 1
    assert runs == ["rein/tests/one"]  # one run, the original thread's
