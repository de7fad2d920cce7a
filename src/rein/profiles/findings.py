"""A session's findings as a file: the input of ``rein profile propose``.

The file (JSON or YAML) is outside input, so it is checked against :data:`FINDINGS_SCHEMA`
before anything is built from it. Example::

    {"session": {"id": "s-42", "outcome": "completed", "tool_calls": 12},
     "summary": "Found the coverage gate; asked for the shell.",
     "learned": [{"text": "CI gates merges on 85% coverage.",
                  "evidence": [{"kind": "file", "ref": ".github/workflows/ci.yml"}]}],
     "threads": [{"id": "thread-flaky", "title": "Flaky auth tests", "status": "done",
                  "evidence": [{"kind": "decision", "ref": "turn 9"}]}],
     "changes": [{"path": "/spec/tools/allow", "value": ["read", "shell"],
                  "rationale": "Running the suite needs the shell."}]}

``changes`` is the generic form: a path under ``/state`` is an operation (it needs
``evidence``), a path under ``/metadata`` or ``/spec`` is a proposal (it needs a
``rationale``). Nothing else can be changed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema_rs

from rein.errors import DocumentError, LoadError
from rein.formats.loader import load_path
from rein.profiles.generate import (
    EVIDENCE_KINDS,
    THREAD_STATUSES,
    Collection,
    Evidence,
    Forget,
    Learned,
    Proposal,
    SessionInfo,
    ThreadUpdate,
)
from rein.profiles.retention import parse_time

_EVIDENCE = {"type": "array", "items": {
    "type": "object", "additionalProperties": False, "required": ["kind", "ref"],
    "properties": {"kind": {"enum": list(EVIDENCE_KINDS)},
                   "ref": {"type": "string", "minLength": 1, "maxLength": 300},
                   "quote": {"type": "string", "maxLength": 600}}}}
_TIME = {"type": "string", "format": "date-time"}

FINDINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "additionalProperties": False, "required": ["session"],
    "properties": {
        "session": {"type": "object", "additionalProperties": False, "required": ["id"],
                    "properties": {
                        "id": {"type": "string", "minLength": 1, "maxLength": 200},
                        "started_at": _TIME, "ended_at": _TIME,
                        "model_used": {"type": "string", "maxLength": 200},
                        "turns": {"type": "integer", "minimum": 0},
                        "tool_calls": {"type": "integer", "minimum": 0},
                        "cost_usd": {"type": "number", "minimum": 0},
                        "outcome": {"enum": ["completed", "aborted", "error", "timeout"]}}},
        "summary": {"type": "string", "maxLength": 4000},
        "working_context": {"type": "object", "additionalProperties": False,
                            "required": ["text", "evidence"],
                            "properties": {"text": {"type": "string", "maxLength": 8000},
                                           "evidence": _EVIDENCE}},
        "learned": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["text", "evidence"],
            "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 4000},
                           "evidence": _EVIDENCE,
                           "collection": {"enum": ["facts", "preferences"]},
                           "id": {"type": "string", "minLength": 1, "maxLength": 120},
                           "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                           "tags": {"type": "array", "items": {"type": "string"}},
                           "scope": {"type": "string", "maxLength": 120}}}},
        "threads": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["title", "evidence"],
            "properties": {"title": {"type": "string", "minLength": 1, "maxLength": 300},
                           "evidence": _EVIDENCE,
                           "id": {"type": "string", "minLength": 1, "maxLength": 120},
                           "status": {"enum": list(THREAD_STATUSES)},
                           "detail": {"type": "string", "maxLength": 4000},
                           "refs": {"type": "array", "items": {"type": "string"}}}}},
        "forget": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["collection", "id", "evidence"],
            "properties": {"collection": {"enum": ["facts", "preferences", "open_threads"]},
                           "id": {"type": "string", "minLength": 1}, "evidence": _EVIDENCE}}},
        "changes": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["path"],
            "properties": {"path": {"type": "string", "pattern": "^/"},
                           "op": {"enum": ["add", "replace", "remove"]}, "value": {},
                           "rationale": {"type": "string"}, "evidence": _EVIDENCE}}},
    },
}


@functools.cache
def _validator() -> Any:
    return jsonschema_rs.Draft202012Validator(FINDINGS_SCHEMA, validate_formats=True)


def _evidence(raw: list[Mapping[str, Any]] | None) -> tuple[Evidence, ...]:
    return tuple(Evidence(kind=e["kind"], ref=e["ref"], quote=e.get("quote"))
                 for e in raw or ())


def load_findings(path: str | Path) -> dict[str, Any]:
    """Read and check a findings file; the keyword arguments of
    :func:`rein.profiles.generate.draft_delta` (except the profile). Raises DocumentError."""
    try:
        doc = load_path(path)
    except LoadError as exc:
        raise DocumentError(f"{path}: {exc.message}", code="OAP274",
                            location=exc.location) from None
    return parse_findings(doc.data, source=str(path), locate=doc.locate)


def parse_findings(data: Any, *, source: str = "<findings>", locate: Any = None) -> dict[str, Any]:
    """Check ``data`` against :data:`FINDINGS_SCHEMA` and build the generation arguments."""
    errors = sorted(_validator().iter_errors(data),
                    key=lambda e: [str(t) for t in e.instance_path])
    if errors:
        first = errors[0]
        pointer = "".join(f"/{t}" for t in first.instance_path)
        raise DocumentError(f"{source}: {pointer or '<root>'}: {first.message}", code="OAP275",
                            location=locate(pointer) if locate else None,
                            hint="see `rein profile propose --help` for the findings format")
    s = data["session"]
    session = SessionInfo(
        id=s["id"], started_at=parse_time(s.get("started_at")),
        ended_at=parse_time(s.get("ended_at")), model_used=s.get("model_used"),
        turns=s.get("turns"), tool_calls=s.get("tool_calls"), cost_usd=s.get("cost_usd"),
        outcome=s.get("outcome"))
    learned = [Learned(text=i["text"], evidence=_evidence(i["evidence"]),
                       collection=i.get("collection", "facts"), id=i.get("id"),
                       confidence=i.get("confidence"), tags=tuple(i.get("tags", ())),
                       scope=i.get("scope")) for i in data.get("learned", ())]
    threads = [ThreadUpdate(title=t["title"], evidence=_evidence(t["evidence"]), id=t.get("id"),
                            status=t.get("status", "open"), detail=t.get("detail"),
                            refs=tuple(t.get("refs", ()))) for t in data.get("threads", ())]
    forget = [Forget(collection=f["collection"], id=f["id"], evidence=_evidence(f["evidence"]))
              for f in data.get("forget", ())]
    proposals: list[Proposal] = []
    for i, change in enumerate(data.get("changes", ())):
        path = change["path"]
        if path == "/state" or path.startswith("/state/"):
            learned_from = _state_change(change, i, source)
            learned.extend(learned_from)
            continue
        if not change.get("rationale"):
            raise DocumentError(f"{source}: /changes/{i}: a change to {path} is a proposal and "
                                "needs a rationale [L2-G4]", code="OAP273")
        proposals.append(Proposal(path=path, op=change.get("op", "replace"),
                                  value=change.get("value"), rationale=change["rationale"]))
    context = data.get("working_context")
    return {"session": session, "summary": data.get("summary"), "learned": learned,
            "threads": threads, "forget": forget, "proposals": proposals,
            "working_context": context["text"] if context else None,
            "working_context_evidence": _evidence(context["evidence"]) if context else ()}


_COLLECTIONS: dict[str, Collection] = {"facts": "facts", "preferences": "preferences"}


def _state_change(change: Mapping[str, Any], i: int, source: str) -> list[Learned]:
    """A generic ``/state`` change: only appending a fact or preference has one meaning."""
    path, value = change["path"], change.get("value")
    collection = _COLLECTIONS.get(path.split("/")[2] if path.count("/") >= 2 else "")
    if collection is not None and change.get("op", "add") == "add" and \
            isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return [Learned(text=value["text"], evidence=_evidence(change.get("evidence")),
                        collection=collection, id=value.get("id"),
                        confidence=value.get("confidence"), tags=tuple(value.get("tags", ())))]
    raise DocumentError(f"{source}: /changes/{i}: {path}: write state through learned, threads, "
                        "forget or working_context; only a new fact or preference may be given "
                        "as a change", code="OAP276")
