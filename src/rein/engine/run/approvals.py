"""The approval queue as the engine uses it: ask once, wait (pause), read the answer.

Every question a person must answer goes through :func:`ask`: the graph digest before a
run, gates, human checkpoints, ``human`` criteria, escalations and takeovers. An entry is
keyed by what is asked *and* the digest of the material shown, so an answer is bound to
exactly that material: if the material changes, the old answer does not apply to it.
Asking again for the same key returns the stored entry (idempotent), which is how a resumed
run finds the answers given while it was paused.

What is shown is bound by content, not by name: a workspace file or directory named in the
material (a gate's ``present``, the outputs under review) adds the digest of its content to
the request (``files``), so a file edited after it was shown makes a new entry and the old
answer does not apply to it; :func:`stale_files` lets an answering surface refuse first.
The request keeps a copy of each text file it shows (``contents``), from the bytes its
digest was computed over, so that a surface shows a person what the answer binds.

A person's answer goes through :func:`answer`, whatever surface took it: it refuses a
confined process (an agent's sandbox), names the approver rein knows (``[approver]`` in the
account's own files, see :mod:`rein.config.approver`), refuses one who holds none of the
entry's ``roles``, refuses material that changed since it was shown and, where answers are
signed, a signature that does not verify, before anything is recorded; the answer records how
it was given (:mod:`rein.engine.run.answering`).

Timeouts need no background timer: a pending entry whose ``timeout_seconds`` has passed is
resolved by its ``on_timeout`` (``hold`` keeps waiting) whenever something looks at it: the
run being scheduled again, or ``rein approvals list`` (:func:`expire_due`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.config.approver import Approver
from rein.core.ids import ApprovalId
from rein.core.states import ApprovalKind, ApprovalStatus
from rein.core.time import iso
from rein.engine.events import EventType, approval_answered
from rein.engine.run.material import KEPT, material_digest, shown_material, stale_files
from rein.engine.run.runtime import RunContext
from rein.engine.run.signals import Paused, RunCancelled
from rein.errors import Refused
from rein.store.base import ApprovalRow, Store, Transition

if TYPE_CHECKING:
    from rein.engine.run.answering import Via
    from rein.engine.run.signed import Signers


def answer(store: Store, workspace: Path, row: ApprovalRow, status: ApprovalStatus, *,
           approver: Approver, now: str, note: str | None = None,
           values: Mapping[str, Any] | None = None, via: Via | None = None,
           signature: str | None = None) -> tuple[ApprovalRow, bool]:
    """Record ``approver``'s answer to ``row``: (the row as stored, whether this changed it).
    ``via``: the surface that took it (``api`` when not said); ``signature``: the
    approver's SSH signature over :func:`rein.engine.run.answering.message`.

    Refused before recording: APPROVAL003 when this process is confined; APPROVAL_ROLE when
    the entry names ``roles`` and the approver holds none of them; APPROVAL_STALE when an
    accept is given and a file it shows changed since it was shown (a decline or a cancel
    approves nothing: it closes the entry); APPROVAL004 when answers here are signed and
    this one's signature is missing or does not verify.
    """
    # Only an answer needs these: a driver's turn (`rein submit`) imports this module too.
    from rein.engine.run.answering import (
        Via,
        after_turn,
        check_signature,
        check_unconfined,
        given,
    )

    via = via or Via(surface="api")
    state = check_unconfined(approver, f"approval {row.approval_id}")
    wanted = [str(r) for r in row.request.get("roles") or []]
    held = [r for r in approver.roles if r in wanted]
    if wanted and not held:
        # Says who may answer, never how to become one: the reader may be the agent.
        raise Refused(
            f"approval {row.approval_id} is for {' or '.join(wanted)}; {approver.id} holds "
            f"{', '.join(approver.roles) or 'no roles'}; nothing was recorded",
            code="APPROVAL_ROLE",
            hint=f"a person who holds {' or '.join(wanted)} answers it")
    if values:
        _check_value_names(row, values)
    if status is ApprovalStatus.ACCEPTED and row.kind is ApprovalKind.GATE and \
            row.request.get("mode") == "input":
        problems = input_problems(values or {}, row.request.get("collect") or {})
        if problems:  # accepted without them, the gate would fail its run
            raise Refused(f"approval {row.approval_id} collects values it was not given: "
                          f"{'; '.join(problems)}; nothing was recorded", code="APPROVAL002",
                          hint=f"give each one: `rein approvals accept {row.approval_id} "
                               "--value NAME=VALUE` (or the fields of its card in the web "
                               "console)")
    # An accept binds what was shown; a decline or a cancel approves nothing, so a changed
    # file does not keep a person from closing the entry with one.
    changed = stale_files(workspace, row) if status is ApprovalStatus.ACCEPTED else []
    if changed:
        raise Refused(f"approval {row.approval_id} shows {', '.join(changed)}, which changed "
                      "since it was presented; nothing was recorded", code="APPROVAL_STALE",
                      hint=f"review the files again; `rein resume {row.run_id}` presents the "
                           "current content as a new approval")
    signed = check_signature(approver, row, status, via, note=note, values=values,
                             signature=signature, workspace=workspace)
    if row.status is not ApprovalStatus.PENDING and approver.allowed_signers is not None:
        row = _forged_reopened(store, row, approver.allowed_signers, now, workspace)
    payload: dict[str, Any] = {"actor": approver.id, "identity": approver.source,
                               "given": given(approver=approver, via=via, state=state,
                                              signed=signed,
                                              after=after_turn(store, row, now))}
    if signed is not None:
        payload["signature"] = signed["signature"]
    if held:
        payload["roles"] = held
    if note:
        payload["note"] = note
    if values:
        payload["values"] = dict(values)
    return record_answer(store, row, status, payload, now)


def _forged_reopened(store: Store, row: ApprovalRow, allowed_signers: str, now: str,
                     workspace: Path) -> ApprovalRow:
    """An entry answered in the store with an answer that does not verify (written there
    without rein) waits for a person again, so that the person's signed answer replaces it
    rather than being taken for the same answer given twice."""
    from rein.engine.run.signed import Signers, answer_problem, reopen

    why = answer_problem(row, Signers(allowed_signers, workspace),
                         now=dt.datetime.fromisoformat(now))
    return row if why is None else reopen(store, row, why, now=now)


def input_problems(values: Mapping[str, Any], collect: Mapping[str, Any]) -> list[str]:
    """What an input gate's answer lacks or gets wrong: each required value of ``collect``
    (one without a default) it does not give, and each value that does not fit its type."""
    from rein.engine.run.params import check_value

    problems = []
    for name, spec in collect.items():
        if name not in values:
            if spec.get("required", True) and "default" not in spec:
                problems.append(f"{name} is required")
            continue
        problem = check_value(values[name], spec)
        if problem:
            problems.append(f"{name}: {problem}")
    return problems


def _check_value_names(row: ApprovalRow, values: Mapping[str, Any]) -> None:
    """APPROVAL001 before recording: a value whose name the approval neither collects nor
    has as an output (a misspelt review edit would otherwise be dropped without a word)."""
    request = row.request
    names = [*(request.get("collect") or {}), *(request.get("outputs") or [])]
    if not names:
        return  # the approval declares no names to hold the values to
    unknown = [name for name in values if name not in names]
    if not unknown:
        return
    from rein.core.suggest import with_suggestion

    takes = f"it takes {', '.join(sorted(set(names)))}"
    raise Refused(f"approval {row.approval_id} takes no value named {unknown[0]!r}; nothing "
                  "was recorded", code="APPROVAL001",
                  hint=with_suggestion(takes, unknown[0], names))


def record_answer(store: Store, row: ApprovalRow, status: ApprovalStatus,
                  answer: Mapping[str, Any], at: str) -> tuple[ApprovalRow, bool]:
    """Write an answer to ``row`` with its ``approval/answered`` event, in one transaction:
    ``(row, changed)``. The same status again records nothing; another answer to an
    answered entry is refused (``APPROVAL_ANSWERED``). Checks who answers and what was
    shown are :func:`answer`'s; this is the write every answer ends in (timeouts too)."""
    return store.answer_approval(
        row.approval_id, status, answer, at, event_type=EventType.APPROVAL_ANSWERED,
        payload=approval_answered(row.approval_id, row.key, status.value))


async def ask(
    ctx: RunContext,
    *,
    key: str,
    kind: ApprovalKind,
    request: Mapping[str, Any],
    shows: Any = None,
    block: bool = True,
) -> ApprovalRow:
    """The answered entry for ``key``; pauses the node (``Paused("human")``) until then.

    ``shows``: the material values put before the person (gate ``present``, outputs under
    review); the workspace files they name are bound by content digest.
    With ``block=False`` (a checkpoint with ``required: false``) the entry is created and the
    pending row is returned at once: the person is told, the run does not wait.
    """
    request, digest, full_key, row = _entry(ctx, key, request, shows)
    if row is None:
        _stopped_by_person(ctx, key)
        row = ApprovalRow(
            approval_id=ApprovalId(ctx.env.ids.new("apv")),
            run_id=ctx.env.run_id,
            key=full_key,
            kind=kind,
            status=ApprovalStatus.PENDING,
            digest=digest,
            request=dict(request),
            created_at=ctx.now(),
        )
        replaced = [r for r in ctx.state.approvals.values()
                    if r.status is ApprovalStatus.PENDING and base_key(r.key) == key]
        # One transaction: the new question never exists beside the one it replaces.
        with ctx.env.store.atomic():
            ctx.emit(
                EventType.APPROVAL_REQUESTED,
                {"approval_id": row.approval_id, "kind": kind.value, "key": full_key,
                 "node": request.get("node"), "prompt": request.get("prompt"),
                 "digest": digest},
                Transition(approval=row),
            )
            for old in replaced:
                ctx.state.approvals[old.key] = supersede(ctx.env.store, old, row, ctx.now())
        ctx.state.approvals[full_key] = row
    if row.status is not ApprovalStatus.PENDING and ctx.env.signers is not None:
        row = _held_to_signature(ctx, ctx.env.signers, row, request, digest)
    if row.status is ApprovalStatus.PENDING:
        row = _timed_out(ctx, row, request)
    if row.status is ApprovalStatus.CANCELLED:
        raise RunCancelled(row.approval_id)
    if row.status is ApprovalStatus.PENDING and block:
        raise Paused("human", {"approval_id": row.approval_id, "key": full_key})
    return row


def asked_before(ctx: RunContext, *, key: str, request: Mapping[str, Any],
                 shows: Any = None) -> bool:
    """Whether :func:`ask` with these arguments finds an entry of its own (pending or
    answered) rather than putting a new question to a person."""
    return _entry(ctx, key, request, shows)[3] is not None


def _entry(ctx: RunContext, key: str, request: Mapping[str, Any], shows: Any
           ) -> tuple[Mapping[str, Any], str, str, ApprovalRow | None]:
    """The request as asked (with the content digests of the files it shows, and their
    copies), its digest, the entry's key, and the entry already asked with that key, if
    any."""
    files, kept = shown_material(ctx.env.workspace, shows) if shows is not None else ({}, {})
    if files:
        request = {**request, "files": files}
    if kept:
        request = {**request, KEPT: kept}
    digest = material_digest(request)
    full_key = f"{key}@{digest[7:19]}"
    row = ctx.state.approvals.get(full_key)
    for again in range(2, len(ctx.state.approvals) + 3):
        if row is None or not superseded(row):
            break
        # This material was asked about before, and that entry was closed when other
        # content replaced it: the content is back, and is asked about afresh.
        full_key = f"{key}@{digest[7:19]}~{again}"
        row = ctx.state.approvals.get(full_key)
    return request, digest, full_key, row


def base_key(full_key: str) -> str:
    """What an entry asks, without the digest of the material it shows: the entries of one
    question about successive content share it."""
    return full_key.rsplit("@", 1)[0]


def superseded(row: ApprovalRow) -> bool:
    """Whether ``row`` was closed because the same question was asked about other
    content (no person answered it)."""
    return row.status is ApprovalStatus.CANCELLED and \
        bool((row.answer or {}).get("superseded_by"))


def supersede(store: Store, row: ApprovalRow, by: ApprovalRow, at: str) -> ApprovalRow:
    """Close the pending ``row``: ``by`` asks the same question about the content as it is
    now, so an answer to ``row`` could never be acted on. Cancelled by rein, with an
    ``approval/answered`` event naming ``by`` (``superseded_by``)."""
    changed = sorted(name for name, digest in (row.request.get("files") or {}).items()
                     if (by.request.get("files") or {}).get(name) != digest)
    what = f"{', '.join(changed)} changed" if changed else "the material changed"
    answered, _ = store.answer_approval(
        row.approval_id, ApprovalStatus.CANCELLED,
        {"actor": "rein", "note": f"superseded by {by.approval_id}: {what} since it was "
                                  "presented", "superseded_by": by.approval_id},
        at, event_type=EventType.APPROVAL_ANSWERED,
        payload={**approval_answered(row.approval_id, row.key,
                                     ApprovalStatus.CANCELLED.value),
                 "superseded_by": by.approval_id})
    return answered


def _stopped_by_person(ctx: RunContext, key: str) -> None:
    """A person who cancelled an earlier entry of this question stopped the run, whatever
    content it showed: a cancel approves nothing, it stops (``RunCancelled``)."""
    for row in ctx.state.approvals.values():
        if row.status is ApprovalStatus.CANCELLED and base_key(row.key) == key and \
                not superseded(row) and (row.answer or {}).get("actor") != "rein":
            raise RunCancelled(row.approval_id)


def _held_to_signature(ctx: RunContext, signers: Signers, row: ApprovalRow,
                       request: Mapping[str, Any], digest: str) -> ApprovalRow:
    """Where answers are signed, an answer is acted on only if it verifies now, for exactly
    what the engine asks (the store is in the workspace, where an agent can write it): one
    that does not is refused and the entry waits for a person again
    (:mod:`rein.engine.run.signed`)."""
    from rein.engine.run.signed import answer_problem, reopen

    why = answer_problem(row, signers, now=ctx.env.clock.now(), digest=digest,
                         request=request)
    if why is None:
        return row
    waiting = reopen(ctx.env.store, row, why, now=ctx.now(), request=request, digest=digest)
    ctx.state.approvals[row.key] = waiting
    return waiting


def _timed_out(ctx: RunContext, row: ApprovalRow, request: Mapping[str, Any]) -> ApprovalRow:
    # The timeout is the one the engine asks with, not whatever the stored entry says.
    answered = resolve_timeout(ctx.env.store, row.replace(request=dict(request)),
                               ctx.env.clock.now())
    if answered.status is not row.status:
        ctx.state.approvals[row.key] = answered
    return answered


def resolve_timeout(store: Store, row: ApprovalRow, now: dt.datetime) -> ApprovalRow:
    """``row`` answered by its ``on_timeout`` when ``timeout_seconds`` have passed at ``now``.

    ``approve`` accepts; ``fail`` and ``escalate`` record ``timed_out`` (the node reads that
    as a rejection, ``escalate`` also escalates); ``hold`` keeps waiting. There is no
    background timer: this runs whenever something looks at the entry (the run being
    scheduled, ``rein resume``, ``rein approvals list``). Returns ``row`` itself when nothing
    changed.
    """
    timeout = row.request.get("timeout_seconds")
    on_timeout = row.request.get("on_timeout", "hold")
    if row.status is not ApprovalStatus.PENDING or timeout is None or on_timeout == "hold":
        return row
    created = dt.datetime.fromisoformat(row.created_at)
    if (now - created).total_seconds() < float(timeout):
        return row
    status = ApprovalStatus.ACCEPTED if on_timeout == "approve" else ApprovalStatus.TIMED_OUT
    answered, _ = record_answer(
        store, row, status,
        {"actor": "rein", "note": f"timed out after {timeout} s: on_timeout {on_timeout}"},
        iso(now),
    )
    return answered


def expire_due(store: Store, now: dt.datetime) -> list[ApprovalRow]:
    """Resolve every pending entry whose timeout has passed; the entries that changed."""
    changed = []
    for row in store.approvals(status=ApprovalStatus.PENDING):
        answered = resolve_timeout(store, row, now)
        if answered is not row:
            changed.append(answered)
    return changed


def human_event(row: ApprovalRow, *, stage: str, mode: str, outcome: str | None = None,
                checkpoint_id: str | None = None) -> dict[str, Any]:
    """The run record's ``human_events`` entry for an answered approval."""
    answer = row.answer or {}
    if outcome is None:
        outcome = {
            ApprovalStatus.ACCEPTED: "approved",
            ApprovalStatus.DECLINED: "rejected",
            ApprovalStatus.TIMED_OUT: "timed_out",
        }.get(row.status, "rejected")
    out: dict[str, Any] = {"at_stage": stage, "mode": mode, "outcome": outcome}
    if checkpoint_id:
        out["checkpoint_id"] = checkpoint_id
    if answer.get("actor"):
        out["actor"] = str(answer["actor"])
    if answer.get("note"):
        out["note"] = str(answer["note"])
    if row.answered_at:
        out["at"] = row.answered_at
    out["x-rein-approval"] = row.approval_id
    if isinstance(answer.get("given"), Mapping):
        out["x-rein-given"] = dict(answer["given"])
    return out
