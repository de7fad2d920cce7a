"""Threads outlive the server: a second ``rein app-server`` resumes a turn the first was
SIGKILLed in the middle of, with the same feed; fork, list, read, archive, name."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from tests.appserver.codex_env import Recorded, client, codex, off_schema, turn_notifications
from tests.appserver.serve import reply, shell, workspace

CodexError = codex.CodexError


def items(turn: Any) -> list[dict[str, Any]]:
    return [i.root.model_dump(mode="json") for i in turn.items]


def test_resume_after_sigkill_mid_turn_rebuilds_the_same_feed(tmp_path: Path) -> None:
    # One conversation per script position: the second process's provider picks up where
    # the saved conversation stands, as a real model would.
    root = workspace(tmp_path, [shell("echo one"), reply("ran one")], position="conversation")
    first = Recorded()
    holder: dict[str, Any] = {}

    def kill(method: str, params: dict[str, Any]) -> dict[str, Any]:
        os.kill(holder["c"]._proc.pid, signal.SIGKILL)  # while the turn waits for us
        holder["c"]._proc.wait()
        return {"decision": "accept"}

    c = client(root, kill, first)
    holder["c"] = c
    c.start()
    before: list[Any] = []
    try:
        c.initialize()
        thread = c.thread_start({}).thread.id
        turn = c.turn_start(thread, "run echo one").turn.id
        for n in turn_notifications(c, turn):
            before.append(n)  # noqa: PERF402 - keeps what came before the kill
    except (CodexError, OSError):
        pass  # the server died under us
    finally:
        with contextlib.suppress(OSError):
            c.close()
    shown = [n.payload.item.root.model_dump(mode="json") for n in before
             if n.method == "item/completed"]
    assert [i["type"] for i in shown] == ["userMessage"]

    second = Recorded()
    with client(root, lambda m, p: {"decision": "accept"}, second) as c:
        c.initialize()
        resumed = c.thread_resume(thread)
        [pending] = resumed.thread.turns
        assert pending.id == turn and pending.status.value == "inProgress"
        assert items(pending) == shown  # what the first client saw, rebuilt from the store
        after = list(turn_notifications(c, turn))
        final = c.thread_read(thread, include_turns=True).thread
    assert second.unknown() == []
    assert off_schema(second) == []
    assert [m for m, _ in second.requests] == ["item/commandExecution/requestApproval"]
    assert after[-1].payload.turn.status.value == "completed"
    streamed = [n.payload.item.root.model_dump(mode="json") for n in after
                if n.method == "item/completed"]
    assert items(final.turns[0]) == shown + streamed
    assert [i["type"] for i in streamed] == ["commandExecution", "agentMessage"]
    assert streamed[0]["status"] == "completed" and streamed[0]["exit_code"] == 0

    with client(root, lambda m, p: {}, Recorded()) as c:  # a third process: the same turns
        c.initialize()
        again = c.thread_read(thread, include_turns=True).thread
    assert items(again.turns[0]) == items(final.turns[0])


def _stripped(turn: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in i.items() if k != "id"} for i in items(turn)]


def test_fork_list_read_archive_and_name(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("hello")])
    seen = Recorded()
    with client(root, lambda m, p: {"decision": "accept"}, seen) as c:
        c.initialize()
        original = c.thread_start({}).thread.id
        turn = c.turn_start(original, "say hello").turn.id
        list(turn_notifications(c, turn))
        fork = c.thread_fork(original).thread
        assert fork.id != original and fork.forked_from_id == original
        forked = c.thread_read(fork.id, include_turns=True).thread
        source = c.thread_read(original, include_turns=True).thread
        assert _stripped(forked.turns[0]) == _stripped(source.turns[0])
        assert len(source.turns) == 1  # the original is untouched
        c.thread_set_name(fork.id, "the fork")
        listed = {t.id: t for t in c.thread_list().data}
        assert set(listed) == {original, fork.id} and listed[fork.id].name == "the fork"
        assert listed[original].preview == "say hello"
        c.thread_archive(original)
        assert [t.id for t in c.thread_list().data] == [fork.id]
        assert [t.id for t in c.thread_list({"archived": True}).data] == [original]
        c.thread_unarchive(original)
        assert {t.id for t in c.thread_list().data} == {original, fork.id}
    assert seen.unknown() == []
    assert off_schema(seen) == []
    methods = seen.methods()
    for expected in ("thread/started", "thread/name/updated", "thread/archived",
                     "thread/unarchived"):
        assert expected in methods
