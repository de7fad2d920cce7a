"""A tool call in ``ask`` on a remote worker pauses the run in the approval queue and the
attempt continues, on a worker, once a person answered: as in process.

The queue between coordinator and worker is replaced by :class:`Loopback`, a named test
double that hands the JSON payload to the worker half (``serving.run_job``) in this
process, with the node as an approved graph would declare it (the store and the signature
are left out); both halves, the wire format and the model worker are the real ones."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rein.providers.scripted import ScriptedProvider
from rein.workers.base import (
    Answer,
    AttemptRequest,
    AttemptResult,
    OutputSpec,
    WorkerPaused,
    worker_id,
)
from rein.workers.brief import SUBMIT
from rein.workers.model import ModelWorker

serving = pytest.importorskip("rein.executors.serving",
                              reason="the scale extra is not installed")
from rein.executors.approved import ApprovedNode
from rein.executors.dbos import QueuedWorker
from rein.executors.tree import tree_of
from rein.executors.wire import decode_request, encode_request

WRITE = {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "hi"}}],
         "usage": {"input": 100, "output": 20}}
DONE = {"tool_calls": [{"name": SUBMIT, "arguments": {"summary": "done"}}],
        "usage": {"input": 120, "output": 10}}


class QueueSession:
    """The engine's session as a test double: saved state, and an approval queue whose
    entries stay unanswered until :meth:`accept_all`."""

    def __init__(self) -> None:
        self.state: Mapping[str, Any] | None = None
        self.queued: dict[str, str | None] = {}

    def load_state(self) -> Mapping[str, Any] | None:
        return self.state

    def save_state(self, state: Mapping[str, Any] | None) -> None:
        self.state = None if state is None else json.loads(json.dumps(state))

    async def ask(self, key: str, request: Mapping[str, Any], *,
                  kind: str = "tool_call") -> tuple[str, Answer | None]:
        answer = self.queued.setdefault(f"{kind}:{key}", None)
        return f"apv-{len(self.queued)}", answer  # type: ignore[return-value]

    def accept_all(self) -> None:
        self.queued = dict.fromkeys(self.queued, "accept")


class Loopback:
    """Stands in for the DBOS queue: the payload goes to the worker half in this process."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws
        self.workflows: list[str] = []

    async def submit(self, worker: Any, request: AttemptRequest,
                     turn: Mapping[str, Any] | None = None) -> str:
        from rein.executors.remote_session import turn_suffix

        self.workflows.append(f"{request.node_id}#{request.attempt}{turn_suffix(turn)}")
        payload = encode_request(request, worker=worker_id(worker), turn=turn, placement={
            **tree_of(self.ws), "access": request.workspace_access})
        node = ApprovedNode(run_id=request.run_id, key=request.node_id, node={
            "requirements": {"permissions": list(request.permissions),
                             "tools": list(request.tools),
                             "workspace": request.workspace_access}})
        return await asyncio.to_thread(serving.run_job, decode_request(payload), node,
                                       rerun=False)


def run(worker: QueuedWorker, request: AttemptRequest) -> AttemptResult:
    async def go() -> AttemptResult:
        last = None
        async for got in worker.run(request):
            last = got
        assert isinstance(last, AttemptResult)
        return last

    return asyncio.run(go())


def test_a_call_in_ask_on_a_worker_waits_for_the_answer_then_runs(tmp_path: Path) -> None:
    inner = ModelWorker(provider=ScriptedProvider([WRITE, DONE]), model="scripted",
                        ask=("fs:write",))
    serving.SERVING.workspace, serving.SERVING.executor_id = tmp_path, "w1"
    serving.SERVING.workers, serving.SERVING.secrets = (inner,), None
    loopback = Loopback(tmp_path)
    queued = QueuedWorker(inner, loopback)  # type: ignore[arg-type]
    session = QueueSession()
    request = AttemptRequest(
        run_id="r", node_id="n", attempt=1, kind="task", title="t", brief="write a.txt",
        inputs={}, outputs=(OutputSpec(name="summary", type="string", description="d"),),
        permissions=("fs:write:a.txt",), tools=("file_write",), workspace=str(tmp_path),
        workspace_access="read_write", session=session)

    with pytest.raises(WorkerPaused) as paused:
        run(queued, request)
    assert paused.value.reason == "approval"
    assert list(session.queued) and all(a is None for a in session.queued.values())
    assert not (tmp_path / "a.txt").exists()  # nothing ran before a person answered
    assert session.state is not None  # the worker's conversation, kept in the run

    # Still unanswered: the run keeps waiting, nothing is enqueued again.
    with pytest.raises(WorkerPaused):
        run(queued, request)
    assert len(loopback.workflows) == 1

    session.accept_all()
    result = run(queued, request)
    assert result.failure is None, result.message
    assert result.outputs == {"summary": "done"}
    assert (tmp_path / "a.txt").read_text() == "hi"
    assert session.state is None  # consumed: a later attempt never resumes it
    # The continuation is a workflow of its own, so a resumed coordinator attaches to it.
    assert len(loopback.workflows) == 2 and loopback.workflows[0] == "n#1"
    assert loopback.workflows[1].startswith("n#1~")


def test_an_attempt_without_a_session_keeps_the_worker_s_own_rule() -> None:
    from rein.executors.remote_session import settle, turn_of

    assert asyncio.run(turn_of(None)) is None
    assert asyncio.run(settle(None, None, {"paused": {"reason": "approval"}})) is False
