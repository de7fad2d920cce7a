"""Applying a state delta to a profile (OAP §5.6, §6): pure, on copies, all or nothing.

Order: name check, revision check (a stale delta is :class:`Refused`, never blind-written),
digest check, writeback mode (the profile's, narrowed by rein's policy; ``propose`` holds
every write for approval, an empty delta included), operations (``/state`` only: the self-modification boundary has
no bypass), retention, revision +1 and timestamps, history entry and trim. The caller
re-validates the result before writing (:mod:`rein.profiles.store`). Proposals are never
applied here, under any mode: they are returned for the queue.

Fixes over the reference applicator (research E.6): appending to an absent collection
creates an array, not ``{"-": ...}``; ``add`` of an id that exists replaces that entry
instead of duplicating it; ``state.updated_at`` is set on every write.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from rein.core.frozen import Frozen
from rein.errors import DocumentError, Refused
from rein.formats.oap.digest import profile_digest
from rein.profiles.policy import WRITEBACK_MODES, narrowest
from rein.profiles.retention import enforce, format_time, trim_history

COLLECTIONS = ("facts", "preferences", "glossary", "open_threads")
_ID_COLLECTIONS = ("facts", "preferences", "open_threads")


class OperationError(DocumentError):
    """A delta operation cannot be applied; the profile is left unchanged."""

    default_code = "OAP240"


class ApplyResult(Frozen):
    """The updated document and what happened on the way."""

    document: dict[str, Any]
    previous_revision: int
    revision: int
    warnings: tuple[str, ...]
    proposals: tuple[dict[str, Any], ...]  # the delta's proposals, never applied
    history_entry: dict[str, Any] | None


def writeback_mode(profile: dict[str, Any], cap: str = "auto") -> str:
    """The profile's ``lifecycle.writeback`` narrowed by rein's policy (``[policy]
    writeback``): a policy of ``propose`` holds even a profile that says ``auto``."""
    lifecycle = (profile.get("spec") or {}).get("lifecycle") or {}
    return narrowest(WRITEBACK_MODES, lifecycle.get("writeback", "propose"), cap)


def apply_delta(profile: dict[str, Any], delta: dict[str, Any], *, approve: bool,
                actor: str, now: datetime, digest: str | None = None,
                cap: str = "auto") -> ApplyResult:
    """Apply ``delta``'s operations to a copy of ``profile``.

    ``digest`` is the profile digest as loaded (computed when omitted). ``approve`` records
    a person's approval of the write (required under ``writeback: propose``, whatever the
    delta holds: an empty one still bumps the revision and writes history). ``cap`` is
    rein's policy ceiling on the mode. Raises :class:`Refused` (stale revision or digest,
    writeback off, approval missing) or :class:`OperationError`.
    """
    meta = profile.get("metadata") or {}
    target = delta["target"]
    if target["name"] != meta.get("name"):
        raise OperationError(f"the delta targets {target['name']!r} but the profile is "
                             f"{meta.get('name')!r}", code="OAP241")
    current = meta.get("revision", 1)
    if target["revision"] != current:
        raise Refused(f"the delta targets revision {target['revision']} but the profile is at "
                      f"revision {current}; nothing was written [L2-A3]", code="OAP242",
                      hint="regenerate the delta from the current revision",
                      target_revision=target["revision"], current_revision=current)
    if target.get("digest") and target["digest"] != (digest or profile_digest(profile)):
        raise Refused(f"the delta pins digest {target['digest']} but the profile is "
                      f"{digest or profile_digest(profile)} [L2-A4]", code="OAP243")
    lifecycle = (profile.get("spec") or {}).get("lifecycle") or {}
    mode = writeback_mode(profile, cap)
    operations = delta.get("operations") or []
    if mode == "off":
        raise Refused("lifecycle.writeback is 'off': the delta is discarded [L2-A6]",
                      code="OAP244")
    if mode == "propose" and not approve:
        # Every persisted write needs the approval, not only one with operations: a delta
        # without any still moves the revision, writes history and enforces retention.
        raise Refused("lifecycle.writeback is 'propose': the delta needs approval before it "
                      "is written [L2-A6]", code="OAP245", hint="review the delta, then re-run "
                      "with --approve")
    doc = copy.deepcopy(profile)
    warnings: list[str] = []
    for i, op in enumerate(operations):
        _apply_one(doc, op, i, warnings)
    state = doc.setdefault("state", {})
    warnings.extend(enforce(state, lifecycle.get("retention") or {}, now))
    stamp = format_time(now)
    doc["metadata"]["revision"] = current + 1
    doc["metadata"]["updated_at"] = stamp
    state["updated_at"] = stamp
    if operations:
        state["revision"] = state.get("revision", 0) + 1
    session = delta["session"]
    entry = {"revision": current + 1, "at": stamp, "by": session["id"],
             "session_id": session["id"],
             "change": (delta.get("summary") or f"{len(operations)} state operations")[:1000],
             "sections": ["state"]}
    if session.get("harness"):
        entry["harness"] = session["harness"]
    if approve:
        entry["approved_by"] = actor
    history = [*doc.get("history", []), entry]
    max_history = (lifecycle.get("retention") or {}).get("max_history", 50)
    doc["history"] = trim_history(history, max_history)
    if not doc["history"]:
        del doc["history"]
    return ApplyResult(document=doc, previous_revision=current, revision=current + 1,
                       warnings=tuple(warnings),
                       proposals=tuple(copy.deepcopy(delta.get("proposals") or [])),
                       history_entry=entry)


def _tokens(path: str) -> list[str]:
    if not (path == "/state" or path.startswith("/state/")):
        # The whole self-modification boundary: never configurable (§6.2, L2-A2).
        raise OperationError(f"{path!r} is outside /state [L2-A2]", code="OAP246")
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]


def _index(container: list[Any], token: str, path: str, *, allow_end: bool) -> int | None:
    if token.startswith("id:"):
        wanted = token[3:]
        for i, item in enumerate(container):
            if isinstance(item, dict) and item.get("id") == wanted:
                return i
        return None
    if token == "-" and allow_end:
        return len(container)
    if token.isdigit() and (token == "0" or not token.startswith("0")):
        return int(token)
    raise OperationError(f"{path}: {token!r} is not an array index", code="OAP247")


def _apply_one(doc: dict[str, Any], op: dict[str, Any], i: int, warnings: list[str]) -> None:
    path, kind = op["path"], op["op"]
    tokens = _tokens(path)
    if tokens == ["state"] and kind == "remove":
        doc.pop("state", None)
        return
    parent: Any = doc
    for depth, token in enumerate(tokens[:-1]):
        if isinstance(parent, list):
            idx = _index(parent, token, path, allow_end=False)
            if idx is None or idx >= len(parent):
                if kind == "remove":
                    warnings.append(f"operation {i}: remove {path}: no such entry; ignored")
                    return
                raise OperationError(f"operation {i}: {path}: no entry {token!r}", code="OAP248")
            parent = parent[idx]
            continue
        if token not in parent:
            if kind == "remove":
                warnings.append(f"operation {i}: remove {path}: nothing there; ignored")
                return
            # Known collections are arrays: the first append must not create {"-": ...}.
            known_array = depth == 1 and tokens[0] == "state" and token in COLLECTIONS
            parent[token] = [] if known_array else {}
        parent = parent[token]
    last = tokens[-1]
    if isinstance(parent, list):
        _array_op(parent, last, op, path, i, warnings,
                  collection=tokens[-2] if len(tokens) >= 2 else "")
    elif isinstance(parent, dict):
        if kind == "remove":
            if last not in parent:
                warnings.append(f"operation {i}: remove {path}: nothing there; ignored")
            parent.pop(last, None)
        elif kind == "replace" and last not in parent:
            raise OperationError(f"operation {i}: replace {path}: nothing there to replace",
                                 code="OAP248")
        else:
            parent[last] = copy.deepcopy(op["value"])
    else:
        raise OperationError(f"operation {i}: {path}: the parent is not a container",
                             code="OAP248")


def _array_op(items: list[Any], token: str, op: dict[str, Any], path: str, i: int,
              warnings: list[str], *, collection: str) -> None:
    kind = op["op"]
    idx = _index(items, token, path, allow_end=kind == "add")
    if kind == "add":
        value = copy.deepcopy(op["value"])
        existing = _index(items, f"id:{value['id']}", path, allow_end=False) if (
            collection in _ID_COLLECTIONS and isinstance(value, dict) and "id" in value) else None
        if existing is not None:  # stable ids make add idempotent: update in place
            items[existing] = value
            warnings.append(f"operation {i}: add {path}: id {value['id']!r} exists; replaced")
        elif idx is None or idx > len(items):
            raise OperationError(f"operation {i}: add {path}: index out of range", code="OAP248")
        else:
            items.insert(idx, value)
    elif kind == "replace":
        if idx is None or idx >= len(items):
            raise OperationError(f"operation {i}: replace {path}: no such entry", code="OAP248")
        items[idx] = copy.deepcopy(op["value"])
    else:
        if idx is None or idx >= len(items):
            warnings.append(f"operation {i}: remove {path}: no such entry; ignored")
            return
        del items[idx]
