"""Delta generation (OAP §5.5, L2-G1..G5): what a session learned, as an ``AgentStateDelta``.

The session never edits its profile. At the end it hands rein what it learned, each item
with the evidence it rests on, and rein turns that into a delta that ``rein profile apply``
(or a person, under ``writeback: propose``) may later apply:

* ``target`` is the revision and digest the session was instantiated from (L2-G2), so a
  profile that moved on in the meantime refuses the delta instead of being blind-written;
* facts, preferences, open threads, the working summary and the session metrics become
  ``operations`` under ``/state``; anything under ``/metadata`` or ``/spec`` becomes a
  ``proposal`` with the risk rein computes, never an operation (L2-G4);
* an item without evidence is not turned into an operation: it is reported as skipped
  (L2-G5: operations come from user statements, decisions, thread changes, cited files and
  tool results, not from a model rewriting its state freely);
* ids are derived from the text (``fact-`` + slug), so learning the same thing again
  updates the entry in place (``replace …/id:<id>``) instead of duplicating it;
* every string is passed through the secret-redaction pass before the delta exists (T3):
  the values of known secrets become ``[secret:NAME]``, credential shapes ``[redacted]``;
* the result is validated against the installed delta schema and rein's delta rules
  (L2-G1); nothing is written anywhere, the profile file least of all (L2-G3).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from rein.core.frozen import Frozen, Record, field
from rein.errors import Refused
from rein.formats.oap.document import load_oap_text
from rein.formats.oap.risk import proposal_risk
from rein.formats.oap.schema import schema_errors
from rein.formats.oap.validate import SECRET_SHAPES, validate_document
from rein.profiles.records import ProfileError
from rein.profiles.resolve import ResolvedProfile
from rein.profiles.retention import format_time
from rein.profiles.writeback import OperationError, apply_delta

EvidenceKind = Literal["user_statement", "decision", "thread_status", "file", "tool_result",
                       "session"]
EVIDENCE_KINDS: tuple[str, ...] = ("user_statement", "decision", "thread_status", "file",
                                   "tool_result", "session")
Collection = Literal["facts", "preferences"]
THREAD_STATUSES = ("open", "blocked", "done", "abandoned")
HARNESS = "rein"
_ID_LENGTH = 48
_SOURCE_LENGTH = 500
_REASON_LENGTH = 1000


class Evidence(Frozen):
    """Where a learned item came from: a kind and a reference a person can follow."""

    kind: EvidenceKind
    ref: str  # "turn 12", "src/auth.py:40", "tool call c-7", ".github/workflows/ci.yml"
    quote: str | None = None  # the words the item rests on, when there are some

    def render(self) -> str:
        return f"{self.kind.replace('_', ' ')}: {self.ref}"


class Learned(Frozen):
    """A fact or preference the session learned."""

    text: str
    evidence: tuple[Evidence, ...]
    collection: Collection = "facts"
    id: str | None = None  # default: derived from the text
    confidence: float | None = None
    tags: tuple[str, ...] = ()
    scope: str | None = None


class ThreadUpdate(Frozen):
    """An open thread opened, updated or closed by the session."""

    title: str
    evidence: tuple[Evidence, ...]
    id: str | None = None  # default: derived from the title
    status: str = "open"
    detail: str | None = None
    refs: tuple[str, ...] = ()


class Forget(Frozen):
    """An entry the session found to be wrong or obsolete."""

    collection: str  # facts | preferences | open_threads
    id: str
    evidence: tuple[Evidence, ...]


class Proposal(Frozen):
    """A change to the contract (``/metadata`` or ``/spec``): only ever proposed."""

    path: str
    rationale: str
    value: Any = None
    op: Literal["add", "replace", "remove"] = "replace"


class SessionInfo(Frozen):
    """What the harness measured about the session (never what the model claims)."""

    id: str
    started_at: datetime | None = None
    ended_at: datetime | None = None
    model_used: str | None = None
    turns: int | None = None
    tool_calls: int | None = None
    cost_usd: float | None = None
    outcome: Literal["completed", "aborted", "error", "timeout"] | None = None
    harness_version: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "harness": HARNESS}
        if self.harness_version:
            out["harness_version"] = self.harness_version
        for key in ("started_at", "ended_at"):
            moment = getattr(self, key)
            if moment is not None:
                out[key] = format_time(moment)
        for key in ("model_used", "turns", "tool_calls", "cost_usd", "outcome"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


class DeltaDraft(Frozen):
    """A generated delta and what was left out of it, and why."""

    delta: dict[str, Any]
    skipped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


class _Build(Record):
    state: Mapping[str, Any]
    redact: Any
    stamp: str
    operations: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)

    def existing(self, collection: str, entry_id: str) -> dict[str, Any] | None:
        for entry in self.state.get(collection) or []:
            if isinstance(entry, dict) and entry.get("id") == entry_id:
                return entry
        return None

    def by_text(self, collection: str, text: str) -> dict[str, Any] | None:
        wanted = _normal(text)
        for entry in self.state.get(collection) or []:
            if isinstance(entry, dict) and _normal(str(entry.get("text", ""))) == wanted:
                return entry
        return None

    def put(self, collection: str, value: dict[str, Any], reason: str,
            confidence: float | None = None) -> None:
        key = f"{collection}/{value['id']}"
        if key in self.touched:
            self.skipped.append(f"{collection} {value['id']!r}: given twice; the first kept")
            return
        self.touched.add(key)
        exists = self.existing(collection, value["id"]) is not None
        op = {"op": "replace" if exists else "add",
              "path": f"/state/{collection}/" + (by_id(value["id"]) if exists else "-"),
              "value": self.redact(value), "reason": self.redact(reason)[:_REASON_LENGTH]}
        if confidence is not None:
            op["confidence"] = confidence
        self.operations.append(op)


def by_id(entry_id: str) -> str:
    """The pointer token of the entry ``entry_id`` (``id:<id>``), escaped as a JSON Pointer
    token: an id a person wrote may hold ``/`` or ``~``."""
    return "id:" + entry_id.replace("~", "~0").replace("/", "~1")


def slug_id(prefix: str, text: str) -> str:
    """A stable id from text: ``prefix-`` + lower-case alphanumeric runs joined by ``-``.

    Learning the same sentence again gives the same id, so it updates in place.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "entry"
    return f"{prefix}-{slug}"[:_ID_LENGTH].rstrip("-")


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def redactor(secrets: Mapping[str, str]) -> Any:
    """The redaction pass: known secret values, then anything shaped like a credential."""
    from rein.formats.redaction import Secrets

    known = Secrets.of(secrets)

    def text(value: str) -> str:
        value = known.text(value)
        for pattern, _ in SECRET_SHAPES:
            value = pattern.sub("[redacted]", value)
        return value

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk


def _sources(evidence: Iterable[Evidence]) -> str:
    return "; ".join(e.render() for e in evidence)[:_SOURCE_LENGTH]


def _reason(evidence: tuple[Evidence, ...], fallback: str) -> str:
    quotes = [f'"{e.quote}" ({e.render()})' for e in evidence if e.quote]
    return "; ".join(quotes) if quotes else f"{fallback} ({_sources(evidence)})"


def _learned(build: _Build, item: Learned) -> None:
    prefix = "fact" if item.collection == "facts" else "pref"
    if not item.evidence:
        build.skipped.append(f"{item.collection} {item.text[:60]!r}: no evidence; not written "
                             "(L2-G5)")
        return
    same = build.by_text(item.collection, item.text)
    entry_id = item.id or (same["id"] if same else slug_id(prefix, item.text))
    before = build.existing(item.collection, entry_id) or {}
    value: dict[str, Any] = {"id": entry_id, "text": item.text,
                             "source": _sources(item.evidence), "learned_at": build.stamp}
    if item.confidence is not None:
        value["confidence"] = item.confidence
    if item.tags:
        value["tags"] = list(item.tags)
    if item.scope:
        value["scope"] = item.scope
    if before.get("pinned"):
        value["pinned"] = True  # pinning is a person's decision; a session keeps it
    build.put(item.collection, value, _reason(item.evidence, "learned in session"),
              item.confidence)


def _thread(build: _Build, item: ThreadUpdate) -> None:
    if not item.evidence:
        build.skipped.append(f"thread {item.title[:60]!r}: no evidence; not written (L2-G5)")
        return
    if item.status not in THREAD_STATUSES:
        raise ProfileError(f"thread {item.title!r}: status {item.status!r} is not one of "
                           f"{', '.join(THREAD_STATUSES)}", code="OAP271")
    entry_id = item.id or slug_id("thread", item.title)
    before = build.existing("open_threads", entry_id) or {}
    value = {**before, "id": entry_id, "title": item.title, "status": item.status,
             "updated_at": build.stamp}
    value.setdefault("opened_at", build.stamp)
    if item.detail is not None:
        value["detail"] = item.detail
    refs = list(dict.fromkeys([*before.get("refs", []), *item.refs]))
    if refs:
        value["refs"] = refs[:32]
    build.put("open_threads", value, _reason(item.evidence, f"thread {item.status}"))


def _forget(build: _Build, item: Forget) -> None:
    if not item.evidence:
        build.skipped.append(f"forget {item.collection}/{item.id}: no evidence; kept (L2-G5)")
        return
    if build.existing(item.collection, item.id) is None:
        build.skipped.append(f"forget {item.collection}/{item.id}: no such entry")
        return
    path = f"/state/{item.collection}/{by_id(item.id)}"
    build.operations.append({"op": "remove", "path": path,
                             "reason": build.redact(_reason(item.evidence, "obsolete"))
                             [:_REASON_LENGTH]})


def _metrics(build: _Build, session: SessionInfo) -> None:
    """Session counters come from what rein measured, so they need no other evidence."""
    before = dict(build.state.get("metrics") or {})
    value = {**before, "sessions": int(before.get("sessions", 0)) + 1,
             "last_session_at": format_time(session.ended_at) if session.ended_at
             else build.stamp}
    if session.tool_calls is not None:
        value["total_tool_calls"] = int(before.get("total_tool_calls", 0)) + session.tool_calls
    if session.cost_usd is not None:
        value["total_cost_usd"] = round(float(before.get("total_cost_usd", 0)) +
                                        session.cost_usd, 6)
    build.operations.append({"op": "replace" if "metrics" in build.state else "add",
                             "path": "/state/metrics", "value": value,
                             "reason": f"session {session.id} measured by rein"})


def _proposal(item: Proposal, redact: Any) -> dict[str, Any]:
    path = item.path
    if not (path.startswith(("/metadata/", "/spec/")) or path in ("/metadata", "/spec")):
        raise ProfileError(f"proposal path {path!r} is not under /metadata or /spec; state "
                           "changes are operations, anything else cannot change [L2-G4]",
                           code="OAP272")
    if not item.rationale.strip():
        raise ProfileError(f"proposal {path}: a rationale is required", code="OAP273")
    out: dict[str, Any] = {"path": path, "op": item.op, "rationale": redact(item.rationale),
                           "risk": proposal_risk(path)}
    if item.op != "remove":
        out["value"] = redact(item.value)
    return out


def propose_delta(resolved: ResolvedProfile, *, session: SessionInfo | str,
                  learned: Iterable[Learned] = (), threads: Iterable[ThreadUpdate] = (),
                  forget: Iterable[Forget] = (), proposals: Iterable[Proposal] = (),
                  working_context: str | None = None,
                  working_context_evidence: tuple[Evidence, ...] = (),
                  summary: str | None = None, secrets: Mapping[str, str] | None = None,
                  record_metrics: bool = True, now: datetime | None = None) -> dict[str, Any]:
    """The ``AgentStateDelta`` of a session of ``resolved``. Pure: writes nothing.

    See :func:`draft_delta` for the same with the list of skipped items.
    """
    return draft_delta(resolved, session=session, learned=learned, threads=threads,
                       forget=forget, proposals=proposals, working_context=working_context,
                       working_context_evidence=working_context_evidence, summary=summary,
                       secrets=secrets, record_metrics=record_metrics, now=now).delta


def draft_delta(resolved: ResolvedProfile, *, session: SessionInfo | str,
                learned: Iterable[Learned] = (), threads: Iterable[ThreadUpdate] = (),
                forget: Iterable[Forget] = (), proposals: Iterable[Proposal] = (),
                working_context: str | None = None,
                working_context_evidence: tuple[Evidence, ...] = (),
                summary: str | None = None, secrets: Mapping[str, str] | None = None,
                record_metrics: bool = True, now: datetime | None = None) -> DeltaDraft:
    """Build, redact and validate the delta. Raises :class:`ProfileError` when the findings
    cannot make a valid delta (the message names the field)."""
    info = SessionInfo(id=session) if isinstance(session, str) else session
    moment = now or datetime.now(UTC)
    redact = redactor(secrets or {})
    build = _Build(state=resolved.state, redact=redact, stamp=format_time(moment))
    for item in learned:
        _learned(build, item)
    for thread in threads:
        _thread(build, thread)
    for gone in forget:
        _forget(build, gone)
    if working_context is not None:
        if working_context_evidence:
            build.operations.append({
                "op": "replace" if "summary" in resolved.state else "add",
                "path": "/state/summary", "value": redact(working_context),
                "reason": redact(_reason(working_context_evidence, "working context"))
                [:_REASON_LENGTH]})
        else:
            build.skipped.append("working context: no evidence; not written (L2-G5)")
    if record_metrics:
        _metrics(build, info)
    meta = resolved.data.get("metadata") or {}
    target: dict[str, Any] = {"name": resolved.name, "revision": resolved.revision,
                              "digest": resolved.digest}
    if meta.get("id"):
        target["id"] = meta["id"]
    delta: dict[str, Any] = {"oap": "1.0", "kind": "AgentStateDelta", "target": target,
                             "session": redact(info.to_json())}
    if summary:
        delta["summary"] = redact(summary)[:4000]
    if build.operations:
        delta["operations"] = build.operations
    contract = [_proposal(p, redact) for p in proposals]
    if contract:
        delta["proposals"] = contract
    _check(delta)
    _trial(resolved, delta, moment)
    notes = []
    writeback = (resolved.spec.get("lifecycle") or {}).get("writeback", "propose")
    if writeback == "off":
        notes.append("the profile's writeback is 'off': rein profile apply will discard this "
                     "delta")
    elif writeback == "propose" and build.operations:
        notes.append("writeback is 'propose': the operations need a person's approval")
    return DeltaDraft(delta=delta, skipped=tuple(build.skipped), notes=tuple(notes))


def _trial(resolved: ResolvedProfile, delta: dict[str, Any], moment: datetime) -> None:
    """Apply the delta to a copy of the profile in memory: a delta that would be refused, or
    would leave an invalid state, is caught now rather than when a person applies it."""
    trial = copy.deepcopy(dict(resolved.data))
    # Only the operations are on trial here, not the writeback mode.
    trial.setdefault("spec", {}).setdefault("lifecycle", {})["writeback"] = "auto"
    try:
        result = apply_delta(trial, delta, approve=True, actor=HARNESS, now=moment,
                             digest=resolved.digest)
    except (OperationError, Refused) as exc:
        raise ProfileError(f"the generated delta would not apply: {exc.message}",
                           code="OAP277") from None
    errors = [e for e in schema_errors("AgentProfile", result.document)
              if e.pointer.startswith("/state")]
    if errors:
        raise ProfileError(f"the generated delta would leave an invalid state: "
                           f"{errors[0].pointer}: {errors[0].message}", code="OAP277",
                           hint="shorten or correct that finding")


def _check(delta: dict[str, Any]) -> None:
    """The delta as any reader would see it must be valid (L2-G1)."""
    doc = load_oap_text(json.dumps(delta, ensure_ascii=False), source="<generated delta>",
                        encoding="json")
    errors = [f for f in validate_document(doc).findings if f.severity == "error"]
    if errors:
        raise ProfileError(f"the generated delta would be invalid: {errors[0].message}",
                           code="OAP270", location=errors[0].location, findings=tuple(errors),
                           hint="shorten or correct the finding named by the pointer")
