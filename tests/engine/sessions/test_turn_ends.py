"""A turn ends once, whatever stops its run: a start that raises once the run exists ends
it ``failed`` (the feed stops waiting for a run that will not finish); a turn nobody will
start ends ``interrupted`` (THREAD008), recorded once, but never while the process that
recorded it may still start it (its start lock)."""

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
from rein.engine.runner import Engine
from rein.errors import ConfigError
from rein.store.sqlite import SQLiteStore
from tests.scenarios.model_env import isolate

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


# Holds a turn's start lock, as a live process that recorded the turn does, until stdin ends.
HOLD = """
import sys
from rein.store.sqlite import SQLiteStore
store = SQLiteStore.open(sys.argv[1], create=False)
with store.lock_run(sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_turn_nobody_will_start_ends_interrupted_once(root: Path) -> None:
    async def record() -> tuple[str, str]:
        with rein.Harness.open(root) as harness:
            thread = harness.start_thread()
            turn = await harness.sessions.begin_turn(thread.id, [{"type": "text",
                                                                  "text": "hello"}])
            turn.release()  # never driven: as if its process had died here
            harness.sessions.active.clear()
            return thread.id, turn.turn_id

    thread_id, turn_id = asyncio.run(record())

    async def read() -> list[dict[str, Any]]:
        with rein.Harness.open(root) as harness:
            return [f.turn() for f in harness.sessions.feeds(thread_id)]

    first, second = asyncio.run(read()), asyncio.run(read())
    assert first == second  # recorded once: every later look reads the same end
    [turn] = first
    assert (turn["status"], turn["error"]["message"]) == (
        "interrupted", (f"THREAD008: turn {turn_id} never started its run: the process "
                        "serving it stopped first, and nothing ran"))
    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        assert [e.type for e in store.events(turn_id)] == ["turn/ended"]  # type: ignore[arg-type]
    finally:
        store.close()


def test_a_turn_another_live_process_is_starting_stays_in_progress(root: Path) -> None:
    async def record() -> tuple[str, str]:
        with rein.Harness.open(root) as harness:
            thread = harness.start_thread()
            turn = await harness.sessions.begin_turn(thread.id, [{"type": "text",
                                                                  "text": "hello"}])
            turn.release()
            harness.sessions.active.clear()
            return thread.id, turn.turn_id

    thread_id, turn_id = asyncio.run(record())
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root), turn_id],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ))
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"

        async def look() -> tuple[str, list[str]]:
            with rein.Harness.open(root) as harness:
                sessions = harness.sessions
                busy = sessions.to_json(sessions.thread(thread_id))["status"]["type"]
                return busy, [f.turn()["status"] for f in sessions.feeds(thread_id)]

        assert asyncio.run(look()) == ("active", ["inProgress"])
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
        holder.stdout.close()
    assert asyncio.run(look()) == ("idle", ["interrupted"])  # its holder is gone
