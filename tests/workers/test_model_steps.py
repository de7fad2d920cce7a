"""The model loop as a stream of typed step records, and the worker's items made from them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from rein.providers.scripted import ScriptedProvider
from rein.workers.base import (
    Answer,
    AttemptRequest,
    AttemptResult,
    Item,
    ItemKind,
    OutputSpec,
)
from rein.workers.brief import SUBMIT
from rein.workers.model import ModelWorker
from rein.workers.model_attempt import steps
from rein.workers.model_steps import (
    Finished,
    ModelTurn,
    Noted,
    Paused,
    Step,
    ToolDecided,
    ToolReturned,
)

WRITE = {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "hi"}}],
         "usage": {"input": 100, "output": 20}}
DONE = {"tool_calls": [{"name": SUBMIT, "arguments": {"summary": "done"}}],
        "usage": {"input": 120, "output": 10}}


class SavingSession:
    """An in-memory AttemptSession that never answers (a test double of the engine's)."""

    def __init__(self) -> None:
        self.state: Mapping[str, Any] | None = None

    def load_state(self) -> Mapping[str, Any] | None:
        return self.state

    def save_state(self, state: Mapping[str, Any] | None) -> None:
        self.state = state

    async def ask(self, key: str, request: Mapping[str, Any], *,
                  kind: str = "tool_call") -> tuple[str, Answer | None]:
        return "apv-1", None


def request_for(ws: Path, **kw: Any) -> AttemptRequest:
    base: dict[str, Any] = {
        "run_id": "r", "node_id": "n", "attempt": 1, "kind": "task", "title": "t",
        "brief": "write a.txt", "inputs": {},
        "outputs": (OutputSpec(name="summary", type="string", description="d"),),
        "permissions": ("fs:write:a.txt",), "tools": ("file_write",), "workspace": str(ws),
        "workspace_access": "read_write"}
    base.update(kw)
    return AttemptRequest(**base)


def worker(*turns: Mapping[str, Any], **kw: Any) -> ModelWorker:
    return ModelWorker(provider=ScriptedProvider(list(turns)), model="scripted", **kw)


def collect(w: ModelWorker, request: AttemptRequest) -> tuple[list[Noted], list[Step]]:
    attempt, opening = w.attempt(request)

    async def go() -> list[Step]:
        return [step async for step in steps(attempt)]

    return opening, asyncio.run(go())


def items_of(w: ModelWorker, request: AttemptRequest) -> list[Item | AttemptResult]:
    async def go() -> list[Item | AttemptResult]:
        return [out async for out in w.run(request)]

    return asyncio.run(go())


def test_an_attempt_is_a_stream_of_typed_steps_ending_with_finished(tmp_path: Path) -> None:
    opening, stream = collect(worker(WRITE, DONE), request_for(tmp_path))
    assert [type(s) for s in stream] == [ModelTurn, ToolDecided, ToolReturned,
                                         ModelTurn, ToolDecided, ToolReturned, Finished]
    assert [n.data["text"] for n in opening] == ["effective permissions for this attempt"]
    first = stream[0]
    assert isinstance(first, ModelTurn) and first.tool_calls == 1
    assert (first.usage.input_tokens, first.usage.output_tokens) == (100, 20)
    decided = stream[1]
    assert isinstance(decided, ToolDecided)
    assert decided == ToolDecided(id=decided.id, name="file_write",
                                  arguments={"path": "a.txt", "content": "hi"})
    last = stream[-1]
    assert isinstance(last, Finished) and last.result.outputs == {"summary": "done"}
    assert (last.result.usage.agent_steps, last.result.usage.tool_calls) == (2, 1)
    with pytest.raises(AttributeError, match="is frozen"):
        setattr(first, "text", "changed")  # noqa: B010 - the assignment a frozen record refuses


def test_the_worker_items_are_the_step_records_items_in_order(tmp_path: Path) -> None:
    request = request_for(tmp_path)
    opening, stream = collect(worker(WRITE, DONE), request)
    (tmp_path / "a.txt").unlink()
    outs = items_of(worker(WRITE, DONE), request)
    expected = [i for s in (*opening, *stream) for i in s.items()]
    assert outs[:-1] == expected
    final = stream[-1]
    assert isinstance(final, Finished) and outs[-1] == final.result


def test_the_submission_result_has_no_refused_field_other_results_do(tmp_path: Path) -> None:
    _, stream = collect(worker(WRITE, DONE), request_for(tmp_path))
    results = [i.data for s in stream if isinstance(s, ToolReturned) for i in s.items()]
    assert results[0]["refused"] is False and results[0]["ok"] is True
    assert list(results[1]) == ["id", "ok", "content"]
    assert results[1]["content"] == "outputs received"


def test_an_ask_ends_the_stream_with_paused_and_the_conversation_saved(tmp_path: Path) -> None:
    session = SavingSession()
    request = request_for(tmp_path, session=session)
    _, stream = collect(worker(WRITE, DONE, ask=("fs:write",)), request)
    assert [type(s) for s in stream] == [ModelTurn, ToolDecided, Paused]
    assert stream[-1] == Paused(approval_id="apv-1", tool="file_write")
    assert stream[-1].items() == ()
    assert session.state is not None
    assert [c["name"] for c in session.state["pending"]] == ["file_write"]
    assert not (tmp_path / "a.txt").exists()


def test_a_resumed_attempt_does_not_record_the_waiting_call_twice(tmp_path: Path) -> None:
    session = SavingSession()
    request = request_for(tmp_path, session=session)
    collect(worker(WRITE, DONE, ask=("fs:write",)), request)
    opening, stream = collect(worker(WRITE, DONE, ask=("fs:write",)), request)
    assert [n.data.get("resumed") for n in opening] == [True]
    # The call still waits: no second model turn, no second ToolDecided for the same call.
    assert [type(s) for s in stream] == [Paused]


def test_secrets_are_redacted_in_every_step_record(tmp_path: Path) -> None:
    (tmp_path / "cfg.txt").write_text("token: hunter2-secret\n")
    read = {"tool_calls": [{"name": "file_read",
                            "arguments": {"path": "cfg.txt", "note": "hunter2-secret"}}]}
    said = {"text": "I saw hunter2-secret", **DONE}
    request = request_for(tmp_path, tools=("file_read",), permissions=("fs:read:**",),
                          env={"TOKEN": "hunter2-secret"}, secret_names=frozenset({"TOKEN"}))
    _, stream = collect(worker(read, said), request)
    dumped = "\n".join(repr(s) for s in stream if not isinstance(s, Finished))  # every field
    assert "hunter2-secret" not in dumped and "[secret:TOKEN]" in dumped
    kinds = [i.kind for s in stream for i in s.items()]
    assert ItemKind.MESSAGE in kinds


def test_with_model_keeps_every_setting_but_the_model() -> None:
    w = worker(DONE, ask=("fs:write",), denied=("net:fetch",), max_steps=7,
               require_boundary=True, clock=lambda: 5.0)
    other = w.with_model("bigger")
    assert other.model == "bigger" and w.model == "scripted"
    kept = {k: v for k, v in vars(w).items() if k != "model"}
    assert {k: v for k, v in vars(other).items() if k != "model"} == kept
