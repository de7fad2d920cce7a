"""An attempt as JSON on the queue, and its answer back.

Only what the worker needs crosses: the request without its session, and the *names* of the
environment variables and secrets the node declares, never their values. The worker process
fills them from its own environment, so no secret is ever written to the queue's tables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rein.core.failures import FailureClass
from rein.core.frozen import Frozen
from rein.core.usage import Budget, Usage
from rein.engine.prepare import secrets_from_env
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
    """A hand-written value class's fields in their declared order, as the queue carries
    them (the text is the one the dataclasses gave: JSON writes the mappings inside)."""
    return {name: getattr(value, name) for name in _declared(type(value))}


def _declared(cls: type) -> list[str]:
    return [name for name in cls.__annotations__ if name != "__slots__"]


def encode_request(request: AttemptRequest, *, worker: str, placement: Mapping[str, Any],
                   turn: Mapping[str, Any] | None = None) -> str:
    """The request as the queue carries it (``placement``: the workspace it needs;
    ``turn``: the state and answers of a paused attempt, see ``remote_session``)."""
    data = {name: getattr(request, name) for name in _declared(AttemptRequest)
            if name not in ("session", "env", "secret_names")}
    data["outputs"] = [_fields(o) for o in request.outputs]
    data["budget"] = _fields(request.budget)
    data["feedback"] = None if request.feedback is None else {
        "failure_class": request.feedback.failure_class.value,
        "summary": request.feedback.summary,
        "failed_criteria": [dict(c) for c in request.feedback.failed_criteria]}
    data["routed"] = None if request.routed is None else _fields(request.routed)
    data["env_names"] = sorted(k for k in request.env if k not in request.secret_names)
    data["secret_names"] = sorted(request.secret_names)
    doc = {"worker": worker, "placement": dict(placement), "request": data}
    if turn is not None:
        doc["turn"] = dict(turn)
    return json.dumps(doc, default=list)


def decode_request(text: str, env: Mapping[str, str]) -> tuple[str, dict[str, Any],
                                                               AttemptRequest]:
    """``(worker name, placement, request)``, the environment filled from ``env``."""
    doc = json.loads(text)
    data = dict(doc["request"])
    names = data.pop("env_names")
    secret_names = data.pop("secret_names")
    secrets = secrets_from_env(env)
    filled = {k: env[k] for k in names if k in env}
    filled.update({k: secrets[k] for k in secret_names if k in secrets})
    feedback = data.get("feedback")
    request = AttemptRequest(**{
        **data,
        "outputs": tuple(OutputSpec(**o) for o in data["outputs"]),
        "permissions": tuple(data["permissions"]), "tools": tuple(data["tools"]),
        "checks": tuple(data["checks"]), "branches": tuple(data["branches"]),
        "budget": Budget(**data["budget"]),
        "feedback": None if feedback is None else Feedback(
            failure_class=FailureClass(feedback["failure_class"]),
            summary=feedback["summary"],
            failed_criteria=tuple(feedback["failed_criteria"])),
        "routed": None if data.get("routed") is None else Routed(**data["routed"]),
        "env": filled, "secret_names": frozenset(k for k in secret_names if k in filled)})
    return str(doc["worker"]), dict(doc.get("placement") or {}), request


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


__all__ = ["decode_answer", "decode_request", "encode_answer", "encode_request"]
