"""The session runtime in process: sandbox policy only narrows, `never` declines, an answer
given with `rein approvals` resolves the question in the feed, acceptForSession."""

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
from rein.engine.cases.sessions import policy
from rein.errors import ConfigError
from rein.protocol import ServerRequest, threads
from tests.scenarios.model_env import isolate

TOML = ('[providers.script]\nkind = "scripted"\noptions = { script = "turns.json" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n')


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture(name="root")
def root_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate(tmp_path, monkeypatch)
    (tmp_path / "rein.toml").write_text(TOML)
    return tmp_path


def script(root: Path, *turns: dict[str, Any]) -> None:
    (root / "turns.json").write_text(json.dumps(list(turns)))


def tool_results(harness: Any, thread_id: str) -> list[dict[str, Any]]:
    [turn] = harness.store.thread_turns(thread_id)
    return [dict(e.payload["data"]) for e in harness.store.events(turn.run_id)
            if e.type == "item" and e.payload["kind"] == "tool_result"]


def test_a_read_only_thread_cannot_write_whatever_the_model_asks(root: Path) -> None:
    script(root, call("file_write", path="out.txt", content="x"),
           call("submit_outputs", reply="could not"))
    with rein.Harness.open(root) as harness:
        thread = harness.start_thread(sandbox="read-only")
        result = thread.run_sync("write out.txt", on_approval=lambda r: "accept")
        refused = tool_results(harness, thread.id)[0]
    assert not (root / "out.txt").exists()
    assert refused["ok"] is False and refused["refused"] is True
    assert result.status == "completed" and result.final_response == "could not"
    [change] = [i for i in result.items if i["type"] == "fileChange"]
    assert change["status"] == "failed"


def test_the_sandbox_requests_only_what_it_names() -> None:
    read_only = policy.requirements(policy.sandbox_policy("read-only"))
    assert "file_write" not in read_only["tools"]
    assert not any(p.startswith("fs:write") for p in read_only["permissions"])
    assert "http_fetch" not in policy.requirements(policy.sandbox_policy(None))["tools"]
    box = policy.sandbox_policy({"type": "workspaceWrite", "writableRoots": ["/etc"]})
    assert policy.requirements(box)["permissions"] == ["fs:read:**", "shell:exec",
                                                       "fs:write:**"]  # workspace only
    with pytest.raises(ConfigError) as err:
        policy.sandbox_policy({"type": "everything"})
    assert err.value.code == "THREAD002"


def test_approval_policy_never_declines_without_asking(root: Path) -> None:
    script(root, call("shell_exec", command="echo hi"), call("submit_outputs", reply="ok"))
    asked: list[Any] = []
    with rein.Harness.open(root) as harness:
        thread = harness.start_thread(approval_policy="never")
        result = thread.run_sync("run it", on_approval=lambda r: asked.append(r) or "accept")
        refused = tool_results(harness, thread.id)[0]
    assert asked == []
    assert refused["content"] == "refused shell:exec:echo hi: a person declined this call"
    assert result.status == "completed"


def test_an_answer_from_the_cli_resolves_the_question_in_the_feed(root: Path) -> None:
    script(root, call("shell_exec", command="echo hi"), call("submit_outputs", reply="ok"))

    async def turn_answered_elsewhere() -> list[str]:
        with rein.Harness.open(root) as harness:
            turn = await harness.start_thread().run("run it")
            seen = []
            async for message in turn.stream():
                seen.append(message.method)
                if isinstance(message, ServerRequest):
                    await asyncio.to_thread(subprocess.run, [
                        sys.executable, "-c",
                        "import sys; from rein.cli import run; sys.exit(run())", "approvals",
                        "accept", message.id, "--workspace", str(root)],
                        check=True, capture_output=True, env=dict(os.environ))
            assert turn.result().status == "completed"
            return seen

    seen = asyncio.run(turn_answered_elsewhere())
    asked = seen.index("item/commandExecution/requestApproval")
    assert "serverRequest/resolved" in seen[asked:]
    assert seen[-2:] == ["turn/completed", "thread/status/changed"]


def test_accept_for_session_accepts_the_same_command_again(root: Path) -> None:
    script(root, call("shell_exec", command="echo hi"), call("submit_outputs", reply="one"),
           call("shell_exec", command="echo hi"), call("submit_outputs", reply="two"))
    asked: list[str] = []

    def once(request: ServerRequest) -> str:
        asked.append(str(request.params.get("command")))
        return "acceptForSession"

    async def two_turns() -> list[str]:
        with rein.Harness.open(root) as harness:
            thread = harness.start_thread()
            replies = []
            for text in ("first", "second"):
                turn = await thread.run(text, on_approval=once)
                replies.append((await turn.wait()).final_response or "")
            return replies

    assert asyncio.run(two_turns()) == ["one", "two"]
    assert asked == ["echo hi"]  # the second time, nobody was asked


def test_a_thread_runs_under_its_oap_profile(root: Path) -> None:
    from tests.scenarios.test_model_profile import PROFILE

    (root / "profiles").mkdir()
    (root / "profiles" / "note-writer.agent.yaml").write_text(PROFILE.read_text())
    script(root, call("file_write", path="README.md", content="outside\n"),
           call("file_write", path="docs/note.md", content="A note.\n"),
           call("submit_outputs", reply="wrote docs/note.md"))
    with rein.Harness.open(root) as harness:
        thread = harness.start_thread(profile="profiles/note-writer.agent.yaml")
        result = thread.run_sync("write a note", on_approval=lambda r: "accept")
        refused = tool_results(harness, thread.id)[0]
    assert result.status == "completed"
    assert not (root / "README.md").exists()  # the profile narrows the thread's sandbox
    assert (root / "docs" / "note.md").read_text() == "A note.\n"
    assert refused["refused"] is True and "fs:write:README.md" in refused["content"]


def test_interrupt_ends_a_waiting_turn_interrupted(root: Path) -> None:
    script(root, call("shell_exec", command="echo hi"), call("submit_outputs", reply="no"))

    async def interrupted() -> tuple[str, list[str]]:
        with rein.Harness.open(root) as harness:
            turn = await harness.start_thread().run("run it")
            seen = []
            async for message in turn.stream():
                seen.append(message.method)
                if isinstance(message, ServerRequest):
                    await turn.interrupt()
            run = harness.store.get_run(harness.store.thread_turns(
                turn._feed.thread_id)[0].run_id)
            assert run is not None and run.status.value == "cancelled"
            return turn.result().status, seen

    status, seen = asyncio.run(interrupted())
    assert status == "interrupted"
    assert "serverRequest/resolved" in seen  # the question is cleared for the client


def test_interrupting_a_graph_turn_before_its_digest_is_approved_runs_nothing(
        root: Path) -> None:
    import yaml

    graph = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "rein/tests/one",
             "title": "one", "version": "1.0.0", "requires_conformance": 1,
             "objective": "Wait.", "entrypoints": ["ok"], "nodes": {"ok": {
                 "type": "gate", "title": "OK?", "description": "A person approves.",
                 "gate": {"mode": "approve", "prompt": "OK?"}}}}
    (root / "one.agraph.yaml").write_text(yaml.safe_dump(graph))
    script(root)

    async def interrupted() -> tuple[str, list[Any]]:
        with rein.Harness.open(root) as harness:
            turn = await harness.start_thread().run(
                [{"type": "mention", "name": "one", "path": "one.agraph.yaml"}])
            async for message in turn.stream():
                if isinstance(message, ServerRequest):  # the digest question, queued
                    queued = harness.store.get_approval(message.id)
                    assert queued is not None and queued.kind.value == "graph"
                    await turn.interrupt()
            return turn.result().status, harness.store.list_runs()

    status, runs = asyncio.run(interrupted())
    assert status == "interrupted" and runs == []


def test_a_thread_stays_in_its_workspace(root: Path) -> None:
    (root / "sub").mkdir()
    with rein.Harness.open(root) as harness:
        inside = harness.sessions.start_thread(cwd="sub")
        assert inside.data["cwd"] == str(root / "sub")
        for outside in ("/", "..", str(root.parent)):
            with pytest.raises(ConfigError) as err:
                harness.sessions.start_thread(cwd=outside)
            assert err.value.code == "THREAD002"


def test_one_turn_at_a_time_even_across_processes(root: Path) -> None:
    script(root, call("shell_exec", command="echo hi"), call("submit_outputs", reply="ok"))

    async def paused() -> str:
        with rein.Harness.open(root) as harness:
            turn = await harness.start_thread().run("run it")
            async for message in turn.stream():
                if isinstance(message, ServerRequest):
                    return turn._feed.thread_id  # leaves the turn waiting
        raise AssertionError("no question was asked")

    thread_id = asyncio.run(paused())

    async def second() -> None:
        with rein.Harness.open(root) as other:  # as another process would
            with pytest.raises(rein.ReinError) as err:
                await other.thread(thread_id).run("and another")
            assert err.value.code == "THREAD001"
            assert threads.to_json(other, other.sessions.thread(thread_id))["status"] == {
                "type": "active", "activeFlags": []}

    asyncio.run(second())


def test_a_replay_of_the_stored_events_is_the_live_feed(root: Path) -> None:
    script(root, call("shell_exec", command="echo hi"), call("submit_outputs", reply="ok"))

    async def live_and_replayed() -> tuple[list[Any], list[Any]]:
        with rein.Harness.open(root) as harness:
            thread = harness.start_thread()
            turn = await thread.run("run it", on_approval=lambda r: "accept")
            live = [(m.method, dict(m.params)) async for m in turn.stream()]
            [stored] = harness.store.thread_turns(thread.id)
            feed = threads.feed_of(harness, stored)
            replayed = [(m.method, dict(m.params)) for e in harness.store.events(stored.run_id)
                        for m in feed.apply(e)]
            return live, replayed

    live, replayed = asyncio.run(live_and_replayed())
    assert live == replayed
    assert not any(method.startswith(("run/", "node/", "attempt/")) for method, _ in live)


def test_each_question_names_the_call_it_asks_about(root: Path) -> None:
    two = {"tool_calls": [{"name": "shell_exec", "arguments": {"command": "echo one"}},
                          {"name": "shell_exec", "arguments": {"command": "echo two"}}]}
    script(root, two, call("submit_outputs", reply="ok"))
    asked: list[tuple[str, str]] = []

    async def both() -> dict[str, str]:
        with rein.Harness.open(root) as harness:
            turn = await harness.start_thread().run("run both")
            items: dict[str, str] = {}
            async for m in turn.stream():
                if m.method == "item/started" and m.params["item"]["type"] == \
                        "commandExecution":
                    items[m.params["item"]["id"]] = m.params["item"]["command"]
                if isinstance(m, ServerRequest):
                    asked.append((str(m.params["itemId"]), str(m.params["command"])))
                    await turn.answer(m.id, "accept")
            return items

    items = asyncio.run(both())
    assert len(asked) == 2
    assert all(items[item] == command for item, command in asked)
    assert sorted(c for _, c in asked) == ["echo one", "echo two"]


def test_pruning_old_runs_keeps_the_runs_that_are_a_threads_history(root: Path) -> None:
    import datetime as dt

    script(root, call("submit_outputs", reply="done"))
    with rein.Harness.open(root) as harness:
        thread = harness.start_thread()
        assert thread.run_sync("say done").status == "completed"
        [turn] = harness.store.thread_turns(thread.id)
        later = harness.clock.now() + dt.timedelta(days=30)
        [entry] = asyncio.run(harness.prune(older_than=dt.timedelta(days=1), now=later))
        assert entry.run_id == turn.run_id and entry.kept == "a thread's turn: its history"
        assert harness.store.get_run(turn.run_id) is not None
