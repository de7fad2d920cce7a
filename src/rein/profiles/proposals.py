"""The proposals queue: contract changes waiting for a person (OAP §6.4, L2-A7).

A delta's ``proposals`` (and, under ``writeback: propose`` without ``--approve``, its state
operations) are stored in ``<workspace>/.rein/profiles/proposals.json`` with a risk rein
computes (:func:`rein.formats.oap.proposal_risk`, never the document's). Each item binds to
the profile's spec digest when it was queued (or its revision, for state operations); an
item whose profile has moved on is refused as stale when accepted. Ids come from the
content, so queueing the same delta twice queues it once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from rein.core.frozen import Frozen
from rein.errors import ConfigError, Refused, StoreError
from rein.formats.canonical import canonical_json
from rein.formats.oap.risk import proposal_risk
from rein.profiles.retention import format_time

QUEUE_VERSION = 1


class Queue(Frozen):
    """The queue file of one workspace."""

    path: Path

    @classmethod
    def for_workspace(cls, workspace: Path) -> Queue:
        return cls(path=Path(workspace) / ".rein" / "profiles" / "proposals.json")

    def _read(self) -> dict[str, Any]:
        if not self.path.is_file():
            return {"version": QUEUE_VERSION, "items": []}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: deep nesting
            raise StoreError(f"{self.path} is unreadable: {exc}", code="OAP260") from None
        if not isinstance(data, dict) or data.get("version") != QUEUE_VERSION:
            version = data.get("version") if isinstance(data, dict) else None
            raise StoreError(f"{self.path} has version {version!r}; this rein "
                             f"reads version {QUEUE_VERSION}", code="OAP261")
        return data

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock", timeout=10):
            data = self._read()
            yield data
            from rein.core.writing import write_atomic

            write_atomic(self.path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def items(self, status: str | None = None) -> list[dict[str, Any]]:
        """Queued items, oldest first, optionally only those with ``status``."""
        return [i for i in self._items() if status is None or i["status"] == status]

    def _items(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self._read()["items"]
        return items

    def get(self, item_id: str) -> dict[str, Any]:
        for item in self._items():
            if item["id"] == item_id:
                return item
        raise ConfigError(f"no proposal {item_id!r} in {self.path}", code="OAP262",
                          hint="see rein profile proposals list")

    def add(self, items: list[dict[str, Any]]) -> list[str]:
        """Queue items (deduplicated by id); returns their ids."""
        with self._locked() as data:
            known = {i["id"] for i in data["items"]}
            for item in items:
                if item["id"] not in known:
                    data["items"].append(item)
                    known.add(item["id"])
        return [i["id"] for i in items]

    def decide(self, item_id: str, status: str, *, by: str, now: datetime,
               note: str | None = None,
               signature: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Mark a pending item accepted or declined (once: a decided item is not reopened);
        ``signature``: the approver's, where approvals are signed."""
        with self._locked() as data:
            for item in data["items"]:
                if item["id"] == item_id:
                    if item["status"] != "pending":
                        # Refused like an accept of a decided item: the queue moved on, the
                        # command line was fine.
                        raise Refused(f"proposal {item_id} is already {item['status']}",
                                      code="OAP263", hint="see rein profile proposals list "
                                                          "--all")
                    item.update(status=status, decided_by=by, decided_at=format_time(now))
                    if note:
                        item["note"] = note
                    if signature is not None:
                        item["signature"] = dict(signature)
                    return dict(item)
        raise ConfigError(f"no proposal {item_id!r} in {self.path}", code="OAP262",
                          hint="see rein profile proposals list")


def _item_id(prefix: str, content: Any) -> str:
    return prefix + hashlib.sha256(canonical_json(content)).hexdigest()[:12]


def content_of(item: Mapping[str, Any]) -> dict[str, Any]:
    """What a queued item proposes, as its id was computed from it."""
    if item.get("kind") == "operations":
        return {"profile": item.get("profile"), "delta": item.get("delta")}
    return {"profile": item.get("profile"), "spec_digest": item.get("spec_digest"),
            "path": item.get("path"), "op": item.get("op", "replace"),
            "value": item.get("value")}


def check_content(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item's content, OAP266 when it no longer gives the item's id: the queue file lies
    in the workspace, and an item changed there since it was queued is not applied."""
    content = content_of(item)
    prefix = "d-" if item.get("kind") == "operations" else "p-"
    if _item_id(prefix, content) != item.get("id"):
        raise Refused(f"proposal {item.get('id')} was changed in the queue since it was "
                      "queued (its content no longer gives its id); nothing was written",
                      code="OAP266", hint="decline it; a fresh proposal is queued anew")
    return content


def decision_message(item_id: str, content: Mapping[str, Any], decision: str) -> bytes:
    """The bytes a signed decision on a profile change signs: the item, its content and
    the decision (``rein profile apply --approve`` signs its delta as item ``apply``)."""
    return canonical_json({"rein": "profile-decision/1", "id": item_id,
                           "decision": decision, "content": dict(content)})


def proposal_items(proposals: tuple[dict[str, Any], ...], *, profile_path: Path,
                   profile_name: str, spec_digest: str, revision: int, session_id: str,
                   now: datetime) -> list[dict[str, Any]]:
    """Queue entries for a delta's proposals, with rein's risk."""
    out = []
    for p in proposals:
        body = {"profile": str(profile_path), "spec_digest": spec_digest,
                "path": p["path"], "op": p.get("op", "replace"), "value": p.get("value")}
        out.append({
            "id": _item_id("p-", body), "kind": "proposal", "status": "pending",
            "profile": str(profile_path), "profile_name": profile_name,
            "spec_digest": spec_digest, "revision": revision,
            "path": p["path"], "op": p.get("op", "replace"), "value": p.get("value"),
            "rationale": p.get("rationale"), "declared_risk": p.get("risk"),
            "risk": proposal_risk(p["path"]), "session_id": session_id,
            "queued_at": format_time(now),
        })
    return out


def delta_item(delta: dict[str, Any], *, profile_path: Path, now: datetime) -> dict[str, Any]:
    """A queue entry holding a delta's state operations until someone approves them."""
    body = {"profile": str(profile_path), "delta": delta}
    ops = delta.get("operations") or []
    return {
        "id": _item_id("d-", body), "kind": "operations", "status": "pending",
        "profile": str(profile_path), "profile_name": delta["target"]["name"],
        "revision": delta["target"]["revision"], "path": "/state",
        "rationale": delta.get("summary") or f"{len(ops)} state operations",
        "risk": "low", "session_id": delta["session"]["id"], "delta": delta,
        "queued_at": format_time(now),
    }
