"""The three walks of docs/architecture.md, traced and counted (tests/walks.py says how).

Each walk runs for real on a scripted worker; its checkpoints are where the walk's data
changes hands, and every one of them must be reached (a renamed function fails the test
instead of shrinking the count). The count is the number of rein modules on the call
stacks at those checkpoints, pure helpers left out; docs/architecture.md lists them.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from walks import Tracer, Walk, trace

from rein.testing import run_graph, scripted_harness

# Walk 1: a criterion fails and the node is retried with feedback (from the node down).
RETRY = {"ags_version": "1.0", "kind": "AgenticGraph", "id": "walks/retry", "title": "retry",
         "objective": "o", "requires_conformance": 3, "entrypoints": ["a"], "nodes": {"a": {
             "title": "a", "description": "Write done.txt.",
             "requirements": {"workspace": "read_write", "permissions": ["fs:write:done.txt"]},
             "success": {"criteria": [{"id": "done", "kind": "command",
                                       "description": "done.txt says done",
                                       "run": "grep -q done done.txt"}]},
             "failure": {"retry": {"max_attempts": 2, "backoff": "none",
                                   "retry_on": ["criteria_failed"]}}}}}
RETRY_CHECKPOINTS = {
    ("engine/run/criteria/command.py", "check"),  # the criterion fails
    ("engine/run/kinds/attempt_end.py", "AttemptEnd.to_record"),  # the attempt ends, typed
    ("engine/run/runtime.py", "RunEnv.save_node"),  # stored with its event
    ("store/sql/events.py", "EventsSQL._append"),  # the one insert of an event
    ("engine/run/kinds/attempt_end.py", "feedback_for"),  # what the next attempt is told
    ("engine/run/kinds/worker_call.py", "build_request"),  # the next attempt's request
    ("workers/scripted.py", "ScriptedWorker.run"),  # the worker gets it (the test double)
}
# Walk 2: a person accepts in the web console and the run continues.
ACCEPT_CHECKPOINTS = {
    ("web/console.py", "Console.answer"), ("engine/service.py", "Harness.answer"),
    ("engine/run/approvals.py", "answer"), ("store/sql/approvals.py", "ApprovalsSQL.answer_approval"),
    ("store/sql/events.py", "EventsSQL._append"), ("engine/run/kinds/gate.py", "run_gate"),
    ("core/states.py", "transition"),
}
# Walk 3: an app-server turn/start becomes a run whose events become notifications; up to
# the node (from there on, a model node is walk 1).
TURN_CHECKPOINTS = {
    ("appserver/methods.py", "turn_start"), ("engine/cases/sessions/runtime.py", "Sessions.begin_turn"),
    ("engine/cases/sessions/turn.py", "TurnRun.drive"), ("engine/run/prepare.py", "prepare"),
    ("engine/run/runner.py", "Engine.start"), ("store/sql/events.py", "EventsSQL._append"),
    ("protocol/feed.py", "Feed.apply"), ("protocol/feed.py", "Feed._n"),
    ("appserver/wire.py", "Wire.send"),
}
NODE = ("engine/run/nodes.py", "execute_node")


def _reached_all(walk: Walk, checkpoints: set[tuple[str, str]]) -> None:
    assert set(walk.hits) == checkpoints, sorted(checkpoints - set(walk.hits))


def test_walk_1_a_retry_with_feedback_takes_at_most_11_modules(tmp_path: Path) -> None:
    (tmp_path / "g.agraph.yaml").write_text(yaml.safe_dump(RETRY))
    answers = {"nodes": {"a": [{"outputs": {}},
                               {"outputs": {}, "files": {"done.txt": "done"}}]}}
    with scripted_harness(tmp_path, answers=answers) as harness:
        outcome, walk = trace(lambda: run_graph(harness, tmp_path / "g.agraph.yaml"),
                              RETRY_CHECKPOINTS, entries={NODE})
    assert outcome.status.value == "succeeded"
    assert walk.hits[("engine/run/kinds/attempt_end.py", "feedback_for")] == 1
    _reached_all(walk, RETRY_CHECKPOINTS)
    assert len(walk.counted) <= 11, walk.counted


def test_walk_2_an_answer_in_the_web_console_takes_at_most_12_modules(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("starlette", reason="the web extra (Starlette) is not installed")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")
    from tests.web.conftest import GATED, make_console, write_graph

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    (tmp_path / "answers.yaml").write_text(yaml.safe_dump({"nodes": {"work": [{"outputs": {}}]}}))
    monkeypatch.setenv("REIN_SCRIPTED_ANSWERS", str(tmp_path / "answers.yaml"))
    write_graph(tmp_path, "g.agraph.yaml", GATED)
    tracer = Tracer(ACCEPT_CHECKPOINTS)
    tracer.install()  # before the console's threads start: each is traced
    try:
        console_of = make_console(tmp_path)
        console = next(console_of)
        console.login()
        run_id = console.start("g.agraph.yaml")
        [gate] = [r for r in console.pending() if r.request.get("node") == "ok"]
        with tracer as walk:
            r = console.post(f"/approvals/{gate.approval_id}",
                             {"action": "accept", "digest": gate.digest})
            assert console.steering is not None and console.steering.idle(60)
        assert r.status_code == 303
        assert [a.request.get("node") for a in console.pending()] == ["ask"]  # it went on
        assert console.harness.run(run_id).status.value == "awaiting_human"
        next(console_of, None)
    finally:
        tracer.remove()
    _reached_all(walk, ACCEPT_CHECKPOINTS)
    assert len(walk.counted) <= 12, walk.counted


def test_walk_3_an_app_server_turn_takes_at_most_12_modules_before_its_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.appserver.server import serve
    from rein.core.loops import run as run_loop
    from rein.engine.service import Harness
    from tests.appserver.serve import environment, reply, workspace

    workspace(tmp_path, [reply("hello back")])
    for name, value in environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    tracer = Tracer(TURN_CHECKPOINTS, beside={NODE})
    tracer.install()
    up_in, up_out = os.pipe()
    down_in, down_out = os.pipe()
    client_out, client_in = os.fdopen(up_out, "wb", buffering=0), os.fdopen(down_in, "rb")
    try:
        with Harness.open(tmp_path) as harness:
            server = threading.Thread(target=lambda: run_loop(serve(
                harness, os.fdopen(up_in, "rb"), os.fdopen(down_out, "wb", buffering=0))))
            server.start()

            def send(message: dict[str, Any]) -> None:
                client_out.write(json.dumps(message).encode() + b"\n")

            def until(key: str, value: Any) -> dict[str, Any]:
                for _ in range(500):  # bounded: a turn of one reply writes a few dozen
                    message = json.loads(client_in.readline())
                    if message.get(key) == value:
                        return dict(message)
                raise AssertionError(f"no message with {key} = {value!r}")

            send({"id": 1, "method": "initialize",
                  "params": {"clientInfo": {"name": "walks", "version": "1"}}})
            until("id", 1)
            send({"id": 2, "method": "thread/start", "params": {}})
            thread = until("id", 2)["result"]["thread"]["id"]
            with tracer as walk:
                send({"id": 3, "method": "turn/start", "params": {
                    "threadId": thread, "input": [{"type": "text", "text": "hi"}]}})
                done = until("method", "turn/completed")
            client_out.close()
            server.join(60)
            assert not server.is_alive()
    finally:
        tracer.remove()
        client_in.close()
    assert done["params"]["turn"]["status"] == "completed"
    _reached_all(walk, TURN_CHECKPOINTS)
    assert "engine/service.py" not in walk.counted  # a turn never calls back into the Harness
    assert len(walk.counted) <= 12, walk.counted


def _outer() -> float:
    from rein.engine.run.kinds.attempt_end import backoff
    from rein.formats.ags.spec import RetrySpec

    return backoff(RetrySpec(), 2, "seed")


def test_the_tracer_counts_the_modules_on_the_way_to_a_checkpoint() -> None:
    delay, walk = trace(_outer, {("engine/run/kinds/attempt_end.py", "backoff")})
    assert delay >= 0
    assert walk.hits == {("engine/run/kinds/attempt_end.py", "backoff"): 1}
    assert walk.counted == ["engine/run/kinds/attempt_end.py"]  # the test's frames are not rein's
    _, none = trace(_outer, {("engine/run/kinds/attempt_end.py", "no_such_function")})
    assert none.hits == {} and none.counted == []
