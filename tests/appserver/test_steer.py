"""``turn/steer`` over the raw JSON-lines wire: input added to the turn in progress reaches
the model at its next step, the active turn is checked, and nothing else is steerable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.store.sqlite import SQLiteStore
from tests.appserver.serve import reply, shell, workspace
from tests.appserver.test_wire import Raw

models = pytest.importorskip("openai_codex.generated.v2_all",
                             reason="the openai-codex SDK is not installed "
                                    "(scripts/codex-sdk.sh installs it)")
registry = pytest.importorskip("openai_codex.generated.notification_registry")

STEER = "also print the word banana"


def _open(raw: Raw) -> str:
    raw.send({"id": "i", "method": "initialize", "params": {"clientInfo": {
        "name": "t", "version": "1"}}})
    raw.until("id", "i")
    raw.send({"method": "initialized"})
    raw.send({"id": "t", "method": "thread/start", "params": {}})
    return str(raw.until("id", "t")["result"]["thread"]["id"])


def _until(raw: Raw, seen: list[dict[str, Any]], key: str, value: Any) -> dict[str, Any]:
    while True:
        message = raw.read()
        seen.append(message)
        if message.get(key) == value:
            return message


def _saved_messages(root: Path, run_id: str) -> list[dict[str, Any]]:
    """The conversation the model worker saved at its last pause: what the model was given."""
    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        states = [e.payload["state"] for e in store.events(run_id)  # type: ignore[arg-type]
                  if e.type == "attempt/state" and e.payload.get("state")]
    finally:
        store.close()
    return list(states[-1]["messages"])


def test_steering_input_reaches_the_model_at_its_next_step(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("echo one"), shell("echo two"), reply("done")])
    raw = Raw(root)
    seen: list[dict[str, Any]] = []
    try:
        thread = _open(raw)
        raw.send({"id": "s0", "method": "turn/steer", "params": {
            "threadId": thread, "expectedTurnId": "turn-x", "input": [
                {"type": "text", "text": STEER}]}})
        idle = raw.until("id", "s0")
        assert idle["error"]["data"]["code"] == "THREAD005"  # no turn in progress
        raw.send({"id": "u", "method": "turn/start", "params": {
            "threadId": thread, "input": [{"type": "text", "text": "run echo one"}]}})
        turn = _until(raw, seen, "id", "u")["result"]["turn"]["id"]
        first = _until(raw, seen, "method", "item/commandExecution/requestApproval")

        raw.send({"id": "s1", "method": "turn/steer", "params": {
            "threadId": thread, "expectedTurnId": "turn-other", "input": [
                {"type": "text", "text": STEER}]}})
        wrong = _until(raw, seen, "id", "s1")
        assert wrong["error"]["data"]["code"] == "THREAD005"
        assert turn in wrong["error"]["message"]
        raw.send({"id": "s2", "method": "turn/steer", "params": {
            "threadId": thread, "expectedTurnId": turn, "input": [
                {"type": "text", "text": STEER}]}})
        steered = _until(raw, seen, "id", "s2")
        assert models.TurnSteerResponse.model_validate(steered["result"]).turn_id == turn

        raw.send({"id": first["id"], "result": {"decision": "accept"}})
        second = _until(raw, seen, "method", "item/commandExecution/requestApproval")
        assert second["params"]["command"] == "echo two"
        run_id = _run_of(root, thread)
        conversation = _saved_messages(root, run_id)
        raw.send({"id": second["id"], "result": {"decision": "accept"}})
        done = _until(raw, seen, "method", "turn/completed")
        assert raw.close() == 0
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
            raw.proc.wait()

    # The model's second answer (echo two) came after it read the steering text, which
    # follows the first command's result.
    roles = [(m["role"], m.get("content", "")) for m in conversation]
    at = roles.index(("user", STEER))
    assert roles[at - 1][0] == "tool" and "one" in roles[at - 1][1]
    assert roles[at + 1][0] == "assistant"
    assert conversation[at + 1]["tool_calls"][0]["arguments"] == {"command": "echo two"}
    assert roles.count(("user", STEER)) == 1  # read once, not again after the resume

    assert done["params"]["turn"]["status"] == "completed"
    notes = [m for m in seen if "method" in m and "id" not in m]
    for note in notes:  # every notification passes the SDK's own model
        registry.NOTIFICATION_MODELS[note["method"]].model_validate(note["params"])
    users = [m["params"]["item"] for m in notes if m["method"] == "item/completed"
             and m["params"]["item"]["type"] == "userMessage"]
    assert [u["content"] for u in users] == [[{"type": "text", "text": "run echo one"}],
                                             [{"type": "text", "text": STEER}]]


def _run_of(root: Path, thread: str) -> str:
    store = SQLiteStore.open(root, create=False)
    assert store is not None
    try:
        [turn] = store.thread_turns(thread)
        assert turn.run_id is not None
        return str(turn.run_id)
    finally:
        store.close()


def test_after_the_turn_nothing_is_steerable(tmp_path: Path) -> None:
    raw = Raw(workspace(tmp_path, [reply("hello")]))
    try:
        thread = _open(raw)
        raw.send({"id": "u", "method": "turn/start", "params": {
            "threadId": thread, "input": [{"type": "text", "text": "say hello"}]}})
        turn = raw.until("id", "u")["result"]["turn"]["id"]
        raw.until("method", "turn/completed")
        raw.send({"id": "s", "method": "turn/steer", "params": {
            "threadId": thread, "expectedTurnId": turn, "input": [
                {"type": "text", "text": STEER}]}})
        late = raw.until("id", "s")
        assert late["error"]["code"] == -32600
        assert late["error"]["data"]["code"] == "THREAD005"
        raw.send({"id": "m", "method": "turn/steer", "params": {"threadId": thread,
                                                               "input": []}})
        assert raw.until("id", "m")["error"]["message"] == "expectedTurnId is required"
        assert raw.close() == 0
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
            raw.proc.wait()


def test_a_submission_already_decided_waits_for_the_steering_input(tmp_path: Path) -> None:
    # One answer both runs a command and submits; the person steers while the command
    # waits for approval: the submission is sent back, and the model answers again.
    both = {"tool_calls": [{"name": "shell_exec", "arguments": {"command": "echo one"}},
                           {"name": "submit_outputs", "arguments": {"reply": "early"}}]}
    raw = Raw(workspace(tmp_path, [both, reply("after the steer")]))
    try:
        thread = _open(raw)
        raw.send({"id": "u", "method": "turn/start", "params": {
            "threadId": thread, "input": [{"type": "text", "text": "run echo one"}]}})
        turn = raw.until("id", "u")["result"]["turn"]["id"]
        asked = raw.until("method", "item/commandExecution/requestApproval")
        raw.send({"id": "s", "method": "turn/steer", "params": {
            "threadId": thread, "expectedTurnId": turn, "input": [
                {"type": "text", "text": STEER}]}})
        assert raw.until("id", "s")["result"] == {"turnId": turn}
        raw.send({"id": asked["id"], "result": {"decision": "accept"}})
        finals = []
        while True:
            message = raw.read()
            item = message.get("params", {}).get("item", {})
            if message.get("method") == "item/completed" and item.get("phase") == "final_answer":
                finals.append(item["text"])
            if message.get("method") == "turn/completed":
                break
        assert finals == ["after the steer"]
        assert raw.close() == 0
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
            raw.proc.wait()
