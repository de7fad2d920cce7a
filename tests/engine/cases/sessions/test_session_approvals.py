"""``acceptForSession`` is kept on the thread: a later process does not ask again for the
same exact action, a different action is still asked, and a fork asks again. And the SDK
steers a turn in progress."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import rein
from rein.errors import Refused
from rein.protocol import ServerRequest
from tests.scenarios.model_env import isolate

# One script per conversation, and a thread is one conversation (each turn reads the turns
# before it): every turn of it asks for the same command.
TOML = ('[providers.script]\nkind = "scripted"\n'
        'options = { script = "turns.json", position = "conversation" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n')


@pytest.fixture(name="root")
def root_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate(tmp_path, monkeypatch)
    (tmp_path / "rein.toml").write_text(TOML)
    (tmp_path / "turns.json").write_text(json.dumps(3 * [
        {"tool_calls": [{"name": "shell_exec", "arguments": {"command": "echo hi"}}]},
        {"tool_calls": [{"name": "submit_outputs", "arguments": {"reply": "said hi"}}]}]))
    return tmp_path


def _turn(root: Path, thread_id: str | None, decision: str, asked: list[str]
          ) -> tuple[str, Any]:
    """One turn in a harness of its own (as another process would open it)."""
    def decide(request: ServerRequest) -> str:
        asked.append(str(request.params.get("command")))
        return decision

    with rein.Harness.open(root) as harness:
        thread = harness.thread(thread_id) if thread_id else harness.start_thread()
        result = thread.run_sync("say hi", on_approval=decide)
        return thread.id, result


def test_accept_for_session_is_remembered_by_the_thread_across_processes(root: Path) -> None:
    asked: list[str] = []
    thread_id, first = _turn(root, None, "acceptForSession", asked)
    _, second = _turn(root, thread_id, "decline", asked)
    assert asked == ["echo hi"]  # the second process did not ask again
    assert first.status == second.status == "completed"
    [command] = [i for i in second.items if i["type"] == "commandExecution"]
    assert command["status"] == "completed" and command["exitCode"] == 0

    with rein.Harness.open(root) as harness:
        kept = harness.sessions.thread(thread_id).data["acceptedForSession"]
        assert len(kept) == 1 and kept[0].startswith("sha256:")
        fork = harness.sessions.fork(thread_id)
        assert fork.data["acceptedForSession"] == []
    _, forked = _turn(root, fork.thread_id, "decline", asked)
    assert asked == ["echo hi", "echo hi"]  # a fork is a new session: it asks again
    [declined] = [i for i in forked.items if i["type"] == "commandExecution"]
    assert declined["status"] == "declined"


def test_accept_for_session_covers_only_the_exact_action(root: Path) -> None:
    asked: list[str] = []
    thread_id, _ = _turn(root, None, "acceptForSession", asked)
    said = json.loads((root / "turns.json").read_text())[:2]  # the first turn's answers
    (root / "turns.json").write_text(json.dumps([
        *said,
        {"tool_calls": [{"name": "shell_exec", "arguments": {"command": "echo other"}}]},
        {"tool_calls": [{"name": "submit_outputs", "arguments": {"reply": "no"}}]}]))
    _, other = _turn(root, thread_id, "decline", asked)
    assert asked == ["echo hi", "echo other"]
    [command] = [i for i in other.items if i["type"] == "commandExecution"]
    assert command["status"] == "declined"


def test_the_sdk_steers_a_turn_in_progress(root: Path) -> None:
    async def steered() -> tuple[Any, str]:
        with rein.Harness.open(root) as harness:
            turn = await harness.start_thread().run("say hi")
            async for message in turn.stream():
                if isinstance(message, ServerRequest):
                    await turn.steer("and wave")
                    await turn.answer(message.id, "accept")
            with pytest.raises(Refused) as late:
                await turn.steer("too late")
            return turn.result(), late.value.code

    result, code = asyncio.run(steered())
    assert code == "THREAD005"
    users = [i["content"] for i in result.items if i["type"] == "userMessage"]
    assert users == [[{"type": "text", "text": "say hi"}], [{"type": "text", "text": "and wave"}]]
    assert result.status == "completed"
