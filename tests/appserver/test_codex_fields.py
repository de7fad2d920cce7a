"""rein's app-server, field by field as Codex 0.163.0 sends it, driven by the official SDK:
every message checked against Codex's own schema (``codex_schema``), and the fields a Codex
client relies on beyond the schema's requirements."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from tests.appserver.codex_env import Recorded, client, off_codex, turn_notifications
from tests.appserver.serve import reply, shell, workspace


def test_what_a_codex_client_reads_of_a_command_turn(tmp_path: Path) -> None:
    root = workspace(tmp_path, [shell("cat notes.txt && cat more.txt"), reply("read it")])
    (root / "notes.txt").write_text("one\n")
    (root / "more.txt").write_text("two\n")
    seen = Recorded()
    with client(root, lambda m, p: {"decision": "accept"}, seen) as c:
        init = c.initialize()
        start = c.thread_start({"approvalPolicy": "on-request", "sandbox": "workspace-write"})
        thread = start.thread.id
        # turnTrigger: the SDK sends it only to a server whose version supports it.
        turn = c.turn_start(thread, "show the notes", {"turnTrigger": "user"}).turn.id
        notes = list(turn_notifications(c, turn))
        read = c.thread_read(thread, include_turns=True).thread

    assert off_codex(seen) == []  # every message, Codex's own schema
    assert init.serverInfo is not None and init.serverInfo.version == "0.163.0"
    assert uuid.UUID(thread).version == 7  # a Codex client refuses a thread id otherwise
    raw_thread = next(m["result"]["thread"] for m in seen.wire
                      if isinstance(m.get("result"), dict) and "thread" in m["result"])
    assert "projectId" in raw_thread and raw_thread["projectId"] is None

    [(method, asked)] = seen.requests
    assert method == "item/commandExecution/requestApproval"
    assert asked["kind"] == "command"
    assert asked["availableDecisions"] == ["accept", "acceptForSession", "decline", "cancel"]
    assert asked["commandActions"] == [  # what a UI shows: "read notes.txt", ...
        {"type": "read", "command": "cat notes.txt", "name": "notes.txt", "path": "notes.txt"},
        {"type": "read", "command": "cat more.txt", "name": "more.txt", "path": "more.txt"}]

    command = next(n.payload.item.root for n in notes if n.method == "item/completed"
                   and n.payload.item.root.type == "commandExecution")
    assert command.aggregated_output == "one\ntwo\n"  # what it printed, nothing around it
    assert command.exit_code == 0
    delta = [n.payload.delta for n in notes
             if n.method == "item/commandExecution/outputDelta"]
    assert delta == ["one\ntwo\n"]

    completed = notes[-1].payload.turn
    items: list[Any] = [i.root.model_dump(mode="json") for i in completed.items]
    assert [i["type"] for i in items] == ["userMessage", "commandExecution", "agentMessage"]
    assert items == [i.root.model_dump(mode="json") for i in read.turns[0].items]
