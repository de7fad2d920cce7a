"""A turn ends once, whatever stops its run: a start that raises once the run exists ends
it ``failed`` (the feed stops waiting for a run that will not finish); a turn whose process
died before starting its run ends ``interrupted`` (THREAD008), recorded once, but never
while that process lives and may still start it (its start lock)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rein
from rein.engine.run.runner import Engine
from rein.errors import ConfigError
from rein.protocol import threads
from tests.scenarios.model_env import isolate
from tests.store.conftest import pg_url, store_url  # noqa: F401  (the fixtures)

TOML = ('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n')
REPLY = {"tool_calls": [{"name": "submit_outputs", "arguments": {"reply": "hi"}}]}


@pytest.fixture(name="root")
def root_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate(tmp_path, monkeypatch)
    (tmp_path / "rein.toml").write_text(TOML)
    (tmp_path / "turns.json").write_text(json.dumps([REPLY, REPLY]))
    return tmp_path


def test_a_start_that_raises_once_the_run_exists_ends_the_turn_failed(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def stuck(self: Engine) -> Any:  # a test double: the run exists, then cannot advance
        raise ConfigError("no place to run attempts", code="SCALE001", hint="fix [executor]")

    monkeypatch.setattr(Engine, "placed_workers", stuck)

    async def main() -> tuple[list[Any], Any, list[dict[str, Any]], str]:
        with rein.Harness.open(root) as harness:
            thread = harness.start_thread()
            turn = await thread.run("hello")
            messages = [m async for m in turn.stream()]
            [row] = harness.store.thread_turns(thread.id)
            run = harness.store.get_run(str(row.run_id))
            assert run is not None
            again = await thread.run("hello again")  # the thread is not busy any more
            return messages, turn.result(), thread.turns(), again.id

    messages, result, turns, _ = asyncio.run(asyncio.wait_for(main(), 60))
    methods = [m.method for m in messages]
    assert methods[0] == "thread/status/changed" and "turn/started" in methods
    assert methods[-3:] == ["error", "turn/completed", "thread/status/changed"]
    assert methods.count("turn/completed") == 1
    assert (result.status, result.error) == ("failed", "SCALE001: no place to run attempts")
    assert [(t["status"], t["error"]) for t in turns] == [
        ("failed", {"message": "SCALE001: no place to run attempts",
                    "additionalDetails": "fix [executor]"}),
        ("inProgress", None)]


# Records a turn as turn/start does, and holds it (its process may still start it) until its
# stdin ends: then it dies before starting the turn's run (SIGKILL).
RECORDER = """
import asyncio, os, signal, sys
from rein.engine.service import Harness

async def main():
    harness = Harness.open(sys.argv[1], store_url=sys.argv[2])
    thread = harness.sessions.start_thread()
    turn = await harness.sessions.begin_turn(thread.thread_id,
                                             [{"type": "text", "text": "hello"}])
    print(thread.thread_id, turn.turn_id, flush=True)
    sys.stdin.read()
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


def test_a_turn_ends_interrupted_once_when_its_process_dies_before_its_run(
        root: Path, store_url: str) -> None:  # noqa: F811
    recorder = subprocess.Popen([sys.executable, "-c", RECORDER, str(root), store_url],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ))
    assert recorder.stdin is not None and recorder.stdout is not None

    async def look() -> tuple[str, list[dict[str, Any]], list[str]]:
        with rein.Harness.open(root, store_url=store_url) as harness:
            sessions = harness.sessions
            busy = threads.to_json(harness, sessions.thread(thread_id))["status"]["type"]
            logged = [e.type for e in harness.store.events(turn_id)]  # type: ignore[arg-type]
            return busy, [f.turn() for f in threads.feeds(harness, thread_id)], logged

    try:
        thread_id, turn_id = recorder.stdout.readline().split()
        # Its process lives: the turn may still start, and nobody takes it for dead.
        busy, [turn], logged = asyncio.run(look())
        assert (busy, turn["status"], logged) == ("active", "inProgress", [])
    finally:
        recorder.stdin.close()
        assert recorder.wait(timeout=60) == -9
        recorder.stdout.close()
    (busy, first, logged), (_, second, again) = asyncio.run(look()), asyncio.run(look())
    assert busy == "idle" and first == second  # recorded once: every look reads that end
    assert logged == again == ["turn/ended"]
    [turn] = first
    assert (turn["status"], turn["error"]) == ("interrupted", {
        "message": f"THREAD008: turn {turn_id} never started its run: the process serving "
                   "it stopped first, and nothing ran",
        "additionalDetails": "start the turn again (turn/start)"})


def test_a_turn_is_over_when_its_turn_completed_is_given(root: Path) -> None:
    # A client that starts its next turn as soon as it hears turn/completed (the official
    # SDK does) must not find the one that completed still in progress (THREAD001): the
    # stream is held at that message while the next turn starts.
    async def main() -> list[str]:
        with rein.Harness.open(root) as harness:
            thread = harness.start_thread()
            turn = await thread.run("hello")
            seen = []
            async for message in turn.stream():
                seen.append(message.method)
                if message.method == "turn/completed":
                    again = await thread.run("hello again")
                    seen.append(f"started {again.id}")
                    break
            return seen

    seen = asyncio.run(asyncio.wait_for(main(), 60))
    assert seen[-2] == "turn/completed" and seen[-1].startswith("started turn-"), seen
