"""An attempt as JSON on the queue, and its answer back.

Only what the worker needs crosses: the request without its session, its environment or
the names in it, and the digest the run was started under. No secret is ever written to the
queue's tables: the worker gives the attempt the variables and secrets the node declares in
the approved graph (:mod:`rein.executors.approved`), from its own environment. The
text is signed on the queue (:mod:`rein.executors.queue_key`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.frozen import Frozen
from rein.core.usage import Budget, Usage
from rein.workers.base import (
    AttemptRequest,
    AttemptResult,
    Feedback,
    Item,
    ItemKind,
    OutputSpec,
    Routed,
)


def _fields(value: Frozen) -> dict[str, Any]:
    """A value class's fields in their declared order, as the queue carries
    them (the text is the one the dataclasses gave: JSON writes the mappings inside)."""
    return {name: getattr(value, name) for name in _declared(type(value))}


def _declared(cls: type) -> list[str]:
    return [name for name in cls.__annotations__ if name != "__slots__"]


class Job(Frozen):
    """An attempt as a worker reads it from the queue."""

    worker: str  # the id of the configured worker that serves it
    placement: Mapping[str, Any]  # the workspace it needs (path, HEAD, access, queue)
    request: AttemptRequest  # with no environment yet: the approved node gives it
    digest: str  # the digest of the graph the run was started under
    turn: Mapping[str, Any] | None  # a paused attempt's state and answers (remote_session)


def encode_request(request: AttemptRequest, *, worker: str, placement: Mapping[str, Any],
                   digest: str = "", turn: Mapping[str, Any] | None = None) -> str:
    """The request as the queue carries it (``placement``: the workspace it needs;
    ``digest``: the graph digest its run was started under; ``turn``: the state and answers
    of a paused attempt, see ``remote_session``)."""
    data = {name: getattr(request, name) for name in _declared(AttemptRequest)
            if name not in ("session", "env", "secret_names")}
    data["outputs"] = [_fields(o) for o in request.outputs]
    data["budget"] = _fields(request.budget)
    data["feedback"] = None if request.feedback is None else {
        "failure_class": request.feedback.failure_class.value,
        "summary": request.feedback.summary,
        "failed_criteria": [dict(c) for c in request.feedback.failed_criteria]}
    data["routed"] = None if request.routed is None else _fields(request.routed)
    doc = {"worker": worker, "placement": dict(placement), "digest": digest, "request": data}
    if turn is not None:
        doc["turn"] = dict(turn)
    return json.dumps(doc, default=list)


def attempt_target(text: str) -> tuple[str, str, str]:
    """``(run id, digest, node key)`` of an attempt job: what the worker checks first."""
    doc = json.loads(text)
    request = doc["request"]
    return str(request["run_id"]), str(doc["digest"]), str(request["node_id"])


def decode_request(text: str) -> Job:
    """The job ``text`` holds, its request with an empty environment."""
    doc = json.loads(text)
    data = dict(doc["request"])
    feedback = data.get("feedback")
    request = AttemptRequest(**{
        **data,
        "outputs": tuple(OutputSpec(**o) for o in data["outputs"]),
        "permissions": tuple(data["permissions"]), "tools": tuple(data["tools"]),
        "checks": tuple(data["checks"]), "branches": tuple(data["branches"]),
        "transcript": tuple(data.get("transcript") or ()),
        "budget": Budget(**data["budget"]),
        "feedback": None if feedback is None else Feedback(
            failure_class=FailureClass(feedback["failure_class"]),
            summary=feedback["summary"],
            failed_criteria=tuple(feedback["failed_criteria"])),
        "routed": None if data.get("routed") is None else Routed(**data["routed"]),
        "env": {}, "secret_names": frozenset()})
    return Job(worker=str(doc["worker"]), placement=dict(doc.get("placement") or {}),
               request=request, digest=str(doc.get("digest") or ""), turn=doc.get("turn"))


def encode_answer(items: list[Item], result: AttemptResult, **about: Any) -> str:
    """What the worker sends back: its items, its result, and who ran it."""
    return json.dumps({
        "items": [{"kind": i.kind.value, "data": dict(i.data)} for i in items],
        "result": {"outputs": dict(result.outputs), "usage": _fields(result.usage),
                   "routed": None if result.routed is None else _fields(result.routed),
                   "failure": None if result.failure is None else result.failure.value,
                   "message": result.message, "decision": result.decision,
                   "extra": dict(result.extra)},
        **about}, default=str)


def decode_answer(text: str) -> tuple[list[Item], AttemptResult, dict[str, Any]]:
    """``(items, result, about)`` of a worker's answer."""
    doc = json.loads(text)
    r = doc.pop("result")
    items = [Item(kind=ItemKind(i["kind"]), data=i["data"]) for i in doc.pop("items")]
    result = AttemptResult(
        outputs=r["outputs"], usage=Usage(**r["usage"]),
        routed=None if r["routed"] is None else Routed(**r["routed"]),
        failure=None if r["failure"] is None else FailureClass(r["failure"]),
        message=r["message"], decision=r["decision"], extra=r["extra"])
    return items, result, doc


__all__ = ["Job", "attempt_target", "decode_answer", "decode_request", "encode_answer", "encode_request"]
