"""Writeback end to end: a profile file, a delta file, and what ends up on disk and in the queue.

:func:`apply_file` is ``rein profile apply``; :func:`accept` and :func:`decline` answer the
proposals queue. Each write holds the profile's lock from the read to the rename.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen, field

#: Where approvals are signed: signs a decision's message with the approver's key and
#: verifies it (APPROVAL004 otherwise), before anything is written; what the record keeps.
Sign = Callable[[bytes], Mapping[str, Any]]

from rein.core.writing import write_atomic
from rein.errors import DocumentError, Refused
from rein.formats.oap.digest import profile_digest, spec_digest
from rein.formats.oap.document import OapDocument
from rein.formats.oap.validate import validate_file
from rein.profiles.proposals import (
    Queue,
    check_content,
    decision_message,
    delta_item,
    proposal_items,
)
from rein.profiles.records import ProfileError
from rein.profiles.retention import format_time, trim_history
from rein.profiles.store import checked_text, profile_lock
from rein.profiles.writeback import ApplyResult, apply_delta, writeback_mode


class ApplyOutcome(Frozen):
    """What ``rein profile apply`` did."""

    status: str  # written | dry_run | queued
    path: str
    previous_revision: int
    revision: int
    text: str | None = None  # the updated document (dry run)
    warnings: tuple[str, ...] = ()
    queued: tuple[dict[str, Any], ...] = ()
    digest: str | None = None
    spec_digest: str | None = None
    history_entry: dict[str, Any] | None = field(default=None)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "path": self.path,
                "previous_revision": self.previous_revision, "revision": self.revision,
                "digest": self.digest, "spec_digest": self.spec_digest,
                "warnings": list(self.warnings), "history_entry": self.history_entry,
                "queued": [{k: q[k] for k in ("id", "kind", "path", "risk")}
                           for q in self.queued]}


def _load(path: Path, what: str) -> OapDocument:
    report = validate_file(path)
    errors = tuple(f for f in report.findings if f.severity == "error")
    if errors or report.document is None:
        raise ProfileError(f"invalid {what}: {path}: {errors[0].message}", code=errors[0].code,
                           location=errors[0].location, hint=errors[0].hint,
                           findings=report.findings)
    expected = "AgentProfile" if what == "profile" else "AgentStateDelta"
    if report.kind != expected:
        raise ProfileError(f"{path} is a {report.kind}, not an {expected}", code="OAP203")
    return report.document


def apply_file(profile_path: Path, delta_path: Path, *, workspace: Path, approve: bool,
               dry_run: bool, actor: str, now: datetime, cap: str = "auto",
               sign: Sign | None = None) -> ApplyOutcome:
    """Validate both files, apply the delta, re-validate, write atomically, queue proposals.

    ``cap`` is rein's ``[policy] writeback``: it narrows the profile's own mode. Under
    ``propose`` without ``approve`` the delta is queued whole and nothing is written.
    ``sign``: where approvals are signed, the approver signs the approved delta first."""
    profile_path, queue = Path(profile_path), Queue.for_workspace(workspace)
    delta = _load(Path(delta_path), "delta").data
    if approve and not dry_run and sign is not None:
        sign(decision_message("apply", {"profile": str(profile_path), "delta": delta},
                              "accepted"))
    with profile_lock(profile_path):
        doc = _load(profile_path, "profile")
        as_loaded = profile_digest(doc.data)
        mode = writeback_mode(doc.data, cap)
        revision = doc.data["metadata"].get("revision", 1)
        queued = proposal_items(tuple(delta.get("proposals") or ()), profile_path=profile_path,
                                profile_name=doc.data["metadata"]["name"],
                                spec_digest=spec_digest(doc.data), revision=revision,
                                session_id=delta["session"]["id"], now=now)
        if mode == "propose" and not approve:
            if delta["target"]["name"] != doc.data["metadata"]["name"] or \
                    delta["target"]["revision"] != revision:
                apply_delta(doc.data, delta, approve=True, actor=actor, now=now,
                            digest=as_loaded)  # raises the same error apply would
            queued.insert(0, delta_item(delta, profile_path=profile_path, now=now))
            if not dry_run:
                queue.add(queued)
            return ApplyOutcome(status="queued", path=str(profile_path),
                                previous_revision=revision, revision=revision,
                                queued=tuple(queued))
        result = apply_delta(doc.data, delta, approve=approve, actor=actor, now=now,
                             digest=as_loaded, cap=cap)
        text = checked_text(result.document, doc)
        if dry_run:
            return _outcome("dry_run", profile_path, result, text, queued)
        write_atomic(profile_path, text)
    if queued:
        queue.add(queued)
    if approve and queue.path.is_file():
        # The same delta may have been queued by an earlier run without --approve.
        waiting = delta_item(delta, profile_path=profile_path, now=now)["id"]
        if any(i["id"] == waiting for i in queue.items("pending")):
            queue.decide(waiting, "accepted", by=actor, now=now, note="applied with --approve")
    return _outcome("written", profile_path, result, None, queued)


def _outcome(status: str, path: Path, result: ApplyResult, text: str | None,
             queued: list[dict[str, Any]]) -> ApplyOutcome:
    return ApplyOutcome(status=status, path=str(path), previous_revision=result.previous_revision,
                        revision=result.revision, text=text, warnings=result.warnings,
                        queued=tuple(queued), digest=profile_digest(result.document),
                        spec_digest=spec_digest(result.document),
                        history_entry=result.history_entry)


def _set_pointer(doc: dict[str, Any], path: str, op: str, value: Any) -> None:
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]
    parent: Any = doc
    for token in tokens[:-1]:
        if isinstance(parent, list):
            parent = parent[int(token)]
        else:
            parent = parent.setdefault(token, {}) if op != "remove" else parent[token]
    last = tokens[-1]
    if isinstance(parent, list):
        if op == "add":
            parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(value))
        elif op == "replace":
            parent[int(last)] = copy.deepcopy(value)
        else:
            del parent[int(last)]
    elif op == "remove":
        del parent[last]
    else:
        parent[last] = copy.deepcopy(value)


def accept(workspace: Path, item_id: str, *, actor: str, now: datetime,
           cap: str = "auto", sign: Sign | None = None) -> dict[str, Any]:
    """Apply one queued item with ``actor``'s approval; refused if the profile moved on (or,
    for state operations, if ``cap`` — rein's ``[policy] writeback`` — is now ``off``), or
    if the item was changed in the queue (OAP266). ``sign``: where approvals are signed,
    the approver signs this very item's content first, and the signature is recorded."""
    queue = Queue.for_workspace(workspace)
    item = queue.get(item_id)
    if item["status"] != "pending":
        raise Refused(f"proposal {item_id} is already {item['status']}", code="OAP263",
                      hint="see rein profile proposals list --all")
    content = check_content(item)
    signature = None if sign is None else sign(decision_message(item_id, content,
                                                                "accepted"))
    path = Path(item["profile"])
    if item["kind"] == "operations":
        outcome = apply_file_data(path, item["delta"], actor=actor, now=now, cap=cap)
    else:
        outcome = _accept_proposal(path, item, actor=actor, now=now)
    queue.decide(item_id, "accepted", by=actor, now=now, signature=signature)
    return outcome


def apply_file_data(path: Path, delta: dict[str, Any], *, actor: str,
                    now: datetime, cap: str = "auto") -> dict[str, Any]:
    """Apply an already validated delta with approval (an accepted ``operations`` item)."""
    with profile_lock(path):
        doc = _load(path, "profile")
        result = apply_delta(doc.data, delta, approve=True, actor=actor, now=now, cap=cap)
        write_atomic(path, checked_text(result.document, doc))
    return {"path": str(path), "revision": result.revision}


def _accept_proposal(path: Path, item: dict[str, Any], *, actor: str,
                     now: datetime) -> dict[str, Any]:
    with profile_lock(path):
        doc = _load(path, "profile")
        current = spec_digest(doc.data)
        if current != item["spec_digest"]:
            raise Refused(f"proposal {item['id']} was made against spec digest "
                          f"{item['spec_digest']}, the profile is now {current}; it is stale",
                          code="OAP264", hint="decline it and ask for a fresh proposal")
        data = copy.deepcopy(doc.data)
        try:
            _set_pointer(data, item["path"], item["op"], item["value"])
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise DocumentError(f"proposal {item['id']} cannot be applied at {item['path']}: "
                                f"{exc}", code="OAP265") from None
        revision = data["metadata"].get("revision", 1) + 1
        stamp = format_time(now)
        data["metadata"]["revision"] = revision
        data["metadata"]["updated_at"] = stamp
        section = item["path"].split("/")[1]
        entry = {"revision": revision, "at": stamp, "by": actor,
                 "session_id": item["session_id"], "harness": "rein",
                 "change": f"Accepted proposal {item['id']}: {item['op']} {item['path']}"[:1000],
                 "approved_by": actor, "sections": [section]}
        max_history = ((data.get("spec") or {}).get("lifecycle") or {}).get(
            "retention", {}).get("max_history", 50)
        data["history"] = trim_history([*data.get("history", []), entry], max_history)
        if not data["history"]:
            del data["history"]
        write_atomic(path, checked_text(data, doc))
    return {"path": str(path), "revision": revision}


def decline(workspace: Path, item_id: str, *, actor: str, now: datetime,
            reason: str | None = None) -> dict[str, Any]:
    """Mark a queued item declined; nothing is written to the profile."""
    return Queue.for_workspace(workspace).decide(item_id, "declined", by=actor, now=now,
                                                 note=reason)
