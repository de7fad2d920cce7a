"""The official openai-codex SDK drives ``rein app-server``: a conversation turn whose shell
command needs approval, answered accept, decline and cancel, over one thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.appserver import codex_schema
from tests.appserver.codex_env import Recorded, client, off_schema, turn_notifications
from tests.appserver.serve import reply, shell, workspace


def check_request(method: str, params: dict[str, Any], answer: dict[str, Any]) -> None:
    """Validate a server request and the client's response against Codex's own schema."""
    assert codex_schema.errors({"id": "x", "method": method, "params": params}) == []
    assert codex_schema.answer_errors(method, answer) == []


@pytest.fixture(name="served")
def served_fixture(tmp_path: Path) -> Path:
    return workspace(tmp_path, [
        shell("echo one"), reply("ran one"),
        shell("echo two"), reply("was told no"),
        shell("echo three"),
    ])


def test_accept_decline_and_cancel_through_the_sdk(served: Path) -> None:
    decisions = iter(["accept", "decline", "cancel"])
    answers: list[dict[str, Any]] = []

    def decide(method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = {"decision": next(decisions)}
        check_request(method, params, answer)
        answers.append(answer)
        return answer

    seen = Recorded()
    with client(served, decide, seen) as c:
        init = c.initialize()
        assert init.userAgent is not None and init.userAgent.startswith("rein/")
        start = c.thread_start({"approvalPolicy": "on-request", "approvalsReviewer": "user",
                                "sandbox": "workspace-write"})
        thread = start.thread.id
        assert start.sandbox.root.type == "workspaceWrite"
        ended = {}
        for text in ("run echo one", "run echo two", "run echo three"):
            turn = c.turn_start(thread, text).turn.id
            completed = list(turn_notifications(c, turn))[-1]
            ended[text] = completed.payload.turn.status.value
        read = c.thread_read(thread, include_turns=True).thread

    assert ended == {"run echo one": "completed", "run echo two": "completed",
                     "run echo three": "interrupted"}
    assert seen.unknown() == []  # every notification passed the SDK's own model
    assert off_schema(seen) == []  # and rein's own published schema
    assert [m for m, _ in seen.requests] == ["item/commandExecution/requestApproval"] * 3
    assert [p["command"] for _, p in seen.requests] == ["echo one", "echo two", "echo three"]
    assert seen.methods().count("serverRequest/resolved") == 3
    one, two, three = read.turns
    commands = [next(i.root for i in t.items if i.root.type == "commandExecution")
                for t in (one, two, three)]
    assert [c.status.value for c in commands] == ["completed", "declined", "declined"]
    assert commands[0].exit_code == 0 and "one" in (commands[0].aggregated_output or "")
    assert commands[1].aggregated_output is not None
    assert "a person declined this call" in commands[1].aggregated_output
    finals = [[i.root.text for i in t.items if i.root.type == "agentMessage"]
              for t in (one, two)]
    assert finals == [["ran one"], ["was told no"]]
    assert [t.status.value for t in read.turns] == ["completed", "completed", "interrupted"]


def test_the_feed_and_thread_read_agree(served: Path) -> None:
    seen = Recorded()
    with client(served, lambda m, p: {"decision": "accept"}, seen) as c:
        c.initialize()
        thread = c.thread_start({}).thread.id
        turn = c.turn_start(thread, "run echo one").turn.id
        streamed = [n.payload.item.root.model_dump(mode="json")
                    for n in turn_notifications(c, turn) if n.method == "item/completed"]
        read = c.thread_read(thread, include_turns=True).thread
    stored = [i.root.model_dump(mode="json") for i in read.turns[0].items]
    assert streamed == stored
    assert [i["type"] for i in stored] == ["userMessage", "commandExecution", "agentMessage"]


def test_file_and_permission_questions_through_the_sdk(tmp_path: Path) -> None:
    root = workspace(tmp_path, [
        {"tool_calls": [{"name": "file_write", "arguments": {"path": "NOTE.md",
                                                             "content": "hi\n"}}]},
        {"tool_calls": [{"name": "http_fetch", "arguments": {"url": "https://example.com/"}}]},
        reply("wrote it, did not fetch"),
    ])
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[policy]\nedit = "ask"\n')
    answers = {"item/fileChange/requestApproval": {"decision": "accept"},
               "item/permissions/requestApproval": {"permissions": {}, "scope": "turn"}}

    def decide(method: str, params: dict[str, Any]) -> dict[str, Any]:
        check_request(method, params, answers[method])
        return answers[method]

    seen = Recorded()
    with client(root, decide, seen) as c:
        c.initialize()
        thread = c.thread_start({"sandbox": "danger-full-access"}).thread.id
        turn = c.turn_start(thread, "write a note, then fetch").turn.id
        notes = list(turn_notifications(c, turn))
    assert seen.unknown() == [] and off_schema(seen) == []
    assert [m for m, _ in seen.requests] == ["item/fileChange/requestApproval",
                                             "item/permissions/requestApproval"]
    assert (root / "NOTE.md").read_text() == "hi\n"
    done = {n.payload.item.root.type: n.payload.item.root for n in notes
            if n.method == "item/completed"}
    assert done["fileChange"].status.value == "completed"
    assert done["mcpToolCall"].status.value == "failed"  # nothing granted: declined
    assert "turn/diff/updated" in [n.method for n in notes]
    assert notes[-1].payload.turn.status.value == "completed"


def test_thread_run_returns_the_failure_of_a_turn_whose_run_is_refused(tmp_path: Path) -> None:
    """The SDK's high-level ``Thread.run()`` waits for ``turn/completed``: a turn whose run
    rein refuses (an executor it cannot use) must end with one, failed, carrying why."""
    from concurrent.futures import ThreadPoolExecutor

    from openai_codex import Codex, CodexConfig

    from tests.appserver.serve import environment, server_args

    root = workspace(tmp_path, [reply("never said")])
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[executor]\nkind = "nonesuch"\n')
    config = CodexConfig(launch_args_override=server_args(root), cwd=str(root),
                         env=environment(root))
    # The client closes first: a run still waiting then ends, and so does the pool.
    with ThreadPoolExecutor(1) as pool, Codex(config) as sdk:
        thread = sdk.thread_start()
        for _ in range(2):  # the thread stays usable: the next turn ends the same way
            running = pool.submit(thread.run, "hello")
            with pytest.raises(RuntimeError) as failed:
                running.result(timeout=60)  # bounded: a turn that never ends fails here
            assert str(failed.value) == ("SCALE001: [executor] kind 'nonesuch' is not one "
                                         "of in_process, dbos")
        turns = thread.read(include_turns=True).thread.turns
    assert [(t.status.value, t.error.message if t.error else None) for t in turns] == [
        ("failed", str(failed.value))] * 2
    assert turns[0].error is not None
    assert turns[0].error.additional_details == 'kind = "dbos" or kind = "in_process"'
