"""A conversation turn's model reads the thread's earlier turns as the messages they were:
the person's words, the model's tool calls, the tools' outputs and its answers, in order,
the same prefix on every later turn; a fork carries them too. The model is the scripted
provider (a test double); a spy keeps every request it was sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import rein
from rein.providers.scripted import ScriptedProvider
from rein.providers.types import Message, ModelRequest, ModelResponse
from tests.scenarios.model_env import isolate

TOML = ('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n')


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture(name="sent")
def sent_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[ModelRequest]:
    """Every request the scripted provider answers, in order."""
    isolate(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rein.toml").write_text(TOML)
    seen: list[ModelRequest] = []
    answer = ScriptedProvider.complete

    async def spy(self: ScriptedProvider, request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return await answer(self, request)

    monkeypatch.setattr(ScriptedProvider, "complete", spy)
    return seen


def script(root: Path, *turns: dict[str, Any]) -> None:
    (root / "turns.json").write_text(json.dumps(list(turns)))


def first_turn_script(root: Path) -> None:
    script(root, call("shell_exec", command="echo printed-by-turn-one"),
           call("submit_outputs", reply="I ran it."),
           call("submit_outputs", reply="It printed printed-by-turn-one."))


def test_the_second_turn_reads_the_first_turns_tool_call_and_its_output(
        tmp_path: Path, sent: list[ModelRequest]) -> None:
    first_turn_script(tmp_path)
    with rein.Harness.open(tmp_path) as harness:
        thread = harness.start_thread()
        one = thread.run_sync("run echo printed-by-turn-one", on_approval=lambda r: "accept")
        two = thread.run_sync("what did the command print?", on_approval=lambda r: "accept")
    assert (one.status, two.status) == ("completed", "completed")
    first_turn = list(sent[1].messages)  # turn one's last request, before its answer
    second = list(sent[2].messages)
    roles = [m.role for m in second]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "user"]
    said, ran, output, submitted, received, asked = second
    assert said.content == "run echo printed-by-turn-one"
    [shell] = ran.tool_calls
    assert shell.name == "shell_exec" and shell.arguments == {"command": "echo printed-by-turn-one"}
    assert output.tool_call_id == shell.id and not output.is_error
    assert "printed-by-turn-one" in output.content
    # The output carried is the one the model read in turn one, word for word.
    assert output.content == first_turn[2].content
    assert [c.name for c in submitted.tool_calls] == ["submit_outputs"]
    assert submitted.tool_calls[0].arguments == {"reply": "I ran it."}
    assert received.tool_call_id == submitted.tool_calls[0].id
    assert asked.content.startswith("# Conversation turn\n\nwhat did the command print?")
    assert "Earlier in this conversation" not in asked.content


def test_each_turn_starts_with_the_messages_the_turn_before_it_started_with(
        tmp_path: Path, sent: list[ModelRequest]) -> None:
    first_turn_script(tmp_path)
    with rein.Harness.open(tmp_path) as harness:
        thread = harness.start_thread()
        thread.run_sync("run echo printed-by-turn-one", on_approval=lambda r: "accept")
        thread.run_sync("what did the command print?")
        script(tmp_path, call("submit_outputs", reply="three"))
    with rein.Harness.open(tmp_path) as harness:  # another process reads the same store
        harness.thread(thread.id).run_sync("and the third?")
    second, third = list(sent[2].messages), list(sent[3].messages)
    # Turn three begins with turn two's carried prefix, unchanged: a prompt cache reuses it.
    assert third[:len(second) - 1] == second[:-1]
    assert [m.role for m in third[len(second) - 1:]] == ["user", "assistant", "tool", "user"]
    assert third[len(second) - 1].content == "what did the command print?"
    assert third[-1].content.startswith("# Conversation turn\n\nand the third?")


def test_a_fork_carries_the_transcript(tmp_path: Path, sent: list[ModelRequest]) -> None:
    first_turn_script(tmp_path)
    with rein.Harness.open(tmp_path) as harness:
        thread = harness.start_thread()
        thread.run_sync("run echo printed-by-turn-one", on_approval=lambda r: "accept")
        fork = thread.fork()
        fork.run_sync("what did the command print?")
    carried = list(sent[2].messages)
    assert [m.role for m in carried] == ["user", "assistant", "tool", "assistant", "tool",
                                         "user"]
    assert "printed-by-turn-one" in carried[2].content


def test_carried_messages_are_real_messages_not_a_folded_brief(
        tmp_path: Path, sent: list[ModelRequest]) -> None:
    script(tmp_path, {"text": "Hello!", "tool_calls": [
        {"name": "submit_outputs", "arguments": {"reply": "Hello!"}}]},
        call("submit_outputs", reply="again"))
    with rein.Harness.open(tmp_path) as harness:
        thread = harness.start_thread()
        thread.run_sync("hi")
        thread.run_sync("hi again")
    said, answer, received, asked = sent[1].messages
    assert said == Message(role="user", content="hi")
    assert answer.content == "Hello!" and answer.tool_calls[0].name == "submit_outputs"
    assert received.role == "tool" and received.content == "outputs received"
    assert asked.role == "user"
