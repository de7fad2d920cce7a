"""``thread.pending_turn()``: a second SDK client, in another process, takes up a turn that
waits on a question, answers it, and sees the turn finish; so does the first."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.appserver.serve import environment, reply, shell, workspace

# The first client starts the turn and streams it without answering: it says what was
# asked, then waits for the turn's end (answered elsewhere).
FIRST = """
import asyncio, json, sys
import rein
from rein.protocol import ServerRequest

async def main():
    with rein.Harness.open(sys.argv[1]) as harness:
        thread = harness.start_thread(approval_policy="on-request")
        turn = await thread.run("say hello from the shell")
        async for message in turn.stream():
            if isinstance(message, ServerRequest):
                print(json.dumps({"thread": thread.id, "turn": turn.id, "asked": message.id}),
                      flush=True)
        result = turn.result()
        print(json.dumps({"status": result.status, "final": result.final_response}),
              flush=True)

asyncio.run(main())
"""

# The second client attaches to the thread's pending turn and answers its question.
SECOND = """
import asyncio, json, sys
import rein
from rein.protocol import ServerRequest

async def main():
    with rein.Harness.open(sys.argv[1]) as harness:
        thread = harness.thread(sys.argv[2])
        turn = await thread.pending_turn()
        asked, methods = [], []
        async for message in turn.stream():
            methods.append(message.method)
            if isinstance(message, ServerRequest):
                asked.append(message.id)
                await turn.answer(message.id, "accept")
        result = turn.result()
        commands = [i["status"] for i in result.items if i["type"] == "commandExecution"]
        print(json.dumps({"turn": turn.id, "asked": asked, "status": result.status,
                          "final": result.final_response, "commands": commands,
                          "completed": methods.count("turn/completed"),
                          "after": await thread.pending_turn() is None}), flush=True)

asyncio.run(main())
"""


def client(code: str, root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, str(root), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**_base_env(), **environment(root)})


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}


def line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    text = proc.stdout.readline()
    if not text:
        _, err = proc.communicate(timeout=60)
        pytest.fail(f"the client ended without a line: {err[-2000:]}")
    return dict(json.loads(text))


def test_another_process_takes_up_the_turn_answers_and_sees_it_finish(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo hello"), reply("it said hello")],
                     position="conversation")
    first = client(FIRST, root)
    try:
        asked = line(first)  # the turn waits on its question, in the first process
        second = client(SECOND, root, asked["thread"])
        out, err = second.communicate(timeout=120)
        assert second.returncode == 0, err[-2000:]
        taken = json.loads(out.strip().splitlines()[-1])
        ended = line(first)
        assert first.wait(timeout=60) == 0
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert taken == {"turn": asked["turn"], "asked": [asked["asked"]], "status": "completed",
                     "final": "it said hello", "commands": ["completed"], "completed": 1,
                     "after": True}
    assert ended == {"status": "completed", "final": "it said hello"}


def test_no_pending_turn_on_an_idle_thread(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import rein
    from rein.core.loops import run as run_loop
    from tests.scenarios.model_env import isolate

    isolate(tmp_path, monkeypatch)
    workspace(tmp_path, [reply("done")])
    with rein.Harness.open(tmp_path) as harness:
        thread = harness.start_thread()
        assert thread.run_sync("hello").status == "completed"
        assert run_loop(thread.pending_turn()) is None


def test_a_stream_left_early_reads_nothing_once_its_harness_closes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A program that stops reading a turn waiting on its question and closes its Harness
    (the turn is for another process to take up) leaves nothing reading the closed store."""
    from contextlib import aclosing

    import rein
    from rein.engine.events import EventLog
    from rein.protocol import ServerRequest
    from tests.scenarios.model_env import isolate

    isolate(tmp_path, monkeypatch)
    workspace(tmp_path, [shell("echo hello"), reply("it said hello")],
              position="conversation")

    async def scenario() -> list[str]:
        with rein.Harness.open(tmp_path) as harness:
            turn = await harness.start_thread(approval_policy="on-request").run("hello")
            asked = []
            async with aclosing(turn.stream()) as feed:
                async for message in feed:
                    if isinstance(message, ServerRequest):
                        asked.append(message.method)
                        break
            store = harness.store
        EventLog.of(store).follower.wake()  # as a commit would: it looks at once
        for _ in range(50):  # a bounded number of turns of the loop, for it to look
            await asyncio.sleep(0)
        return asked

    assert asyncio.run(scenario()) == ["item/commandExecution/requestApproval"]
    assert capsys.readouterr().err == ""


def test_a_turn_taken_up_in_its_own_process_is_driven_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn's first ``Turn`` drives it (a graph turn waits on its digest question);
    the one ``pending_turn`` gives follows it: the graph runs once."""
    from contextlib import aclosing

    import yaml

    import rein
    from rein.protocol import ServerRequest
    from tests.appserver.test_graph_turn import GRAPH, MENTION
    from tests.scenarios.model_env import isolate

    isolate(tmp_path, monkeypatch)
    workspace(tmp_path, [reply("shipped")], position="conversation")
    (tmp_path / "gated.agraph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))

    async def scenario() -> tuple[str, list[str]]:
        with rein.Harness.open(tmp_path) as harness:
            thread = harness.start_thread()
            first = await thread.run(MENTION)
            async with aclosing(first.stream()) as feed:
                async for message in feed:
                    if isinstance(message, ServerRequest):
                        break  # the digest question, left open
            pending = await thread.pending_turn(on_approval=lambda request: "accept")
            assert pending is not None and pending.id == first.id
            result = await pending.wait()
            return result.status, [r.graph_id for r in harness.runs()]

    status, runs = asyncio.run(scenario())
    assert status == "completed"
    assert runs == ["rein/tests/gated"]
