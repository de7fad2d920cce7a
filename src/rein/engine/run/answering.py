"""Who answers an approval, and how: the checks on the answerer and the record of the answer.

The threat: an agent drives rein and could answer its own gates. An agent confined by its
sandbox (the Codex CLI's, Claude Code's: no-new-privileges, which no descendant can drop)
cannot answer at all (APPROVAL003), whatever surface it reaches: the command line, or a
console or app-server it started itself, since a server's own confinement is what counts.
Who the approver is, the roles they hold, whether a confined process may answer and whose
signatures count come only from the account's own files (:mod:`rein.config.approver`).
With ``[approver] allowed_signers`` set, an accept or a decline must carry the approver's
SSH signature over :func:`message` (APPROVAL004), checked before anything is recorded.

Every answer records how it was given (:func:`given`): the surface, the identity and how it
was established (``os-user``: the account of the process's real user id; ``web-session``:
the console session that presented the server's token; ``ssh-signature``: the key's
fingerprint), whether the process was confined and had a terminal, and the driver turn it
followed, with the seconds between them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.config.approver import OS_ACCOUNT, Approver
from rein.core.confinement import Confinement, confinement, has_terminal
from rein.core.frozen import Frozen
from rein.core.states import ApprovalStatus
from rein.errors import Refused
from rein.formats.canonical import canonical_json
from rein.store.base import ApprovalRow, Store

#: The surfaces that take answers from a person.
SURFACES = ("cli", "web", "app-server", "acp", "api")


class Via(Frozen):
    """Where an answer comes from: the surface that took it, and what it knows of who."""

    surface: str  # one of SURFACES
    session: str | None = None  # the web console's session (a digest of its id, never the id)
    # Given by rein under a standing instruction of a person, not asked of one:
    # "accept-for-session", "approval-policy-never", "turn-interrupt".
    standing: str | None = None


def session_tag(session_id: str) -> str:
    """What a record keeps of a web session: enough to tell sessions apart, not to use one."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:16]


def check_unconfined(approver: Approver, what: str) -> Confinement:
    """This process's confinement; APPROVAL003 when it is confined (the answer to ``what``,
    "approval apv-…" say, is refused before anything is read or recorded)."""
    state = confinement()
    if state.confined and not (approver.confined_ok and
                               not any(map(_writable, approver.confined_ok_files))):
        raise Refused(
            f"{what} was not answered: this process runs under "
            "no-new-privileges, the way an agent's sandbox runs its commands, and approvals "
            "are a person's to answer; nothing was recorded", code="APPROVAL003",
            hint="a person answers it outside any agent's sandbox; an agent stops here and "
                 "tells the person what waits")
    return state


def _writable(path: str) -> bool:
    """Whether this process could write ``path``, or replace it through a folder above it:
    an opt-in a confined process could have written itself is no opt-in."""
    here = Path(path)
    for step in (here, *here.parents):
        if os.access(step, os.W_OK):
            return True
    return False


def message(row: ApprovalRow, status: ApprovalStatus, *, note: str | None,
            values: Mapping[str, Any] | None) -> bytes:
    """The bytes a signed answer signs: the approval, what it showed, and the answer."""
    return canonical_json({"rein": "approval-answer/1", "approval_id": row.approval_id,
                           "run_id": row.run_id, "key": row.key, "digest": row.digest,
                           "decision": status.value, "note": note or "",
                           "values": dict(values or {})})


def needs_signature(approver: Approver, status: ApprovalStatus, via: Via) -> bool:
    """Signed mode: an accept or a decline a person gives. A cancel stops the run, as
    ``rein runs cancel`` does unsigned; a standing decline runs nothing."""
    if approver.allowed_signers is None or status is ApprovalStatus.CANCELLED:
        return False
    return not (via.standing is not None and status is ApprovalStatus.DECLINED)


def check_signature(approver: Approver, row: ApprovalRow, status: ApprovalStatus, via: Via,
                    *, note: str | None, values: Mapping[str, Any] | None,
                    signature: str | None, workspace: Path | None = None
                    ) -> dict[str, Any] | None:
    """The verified signature as recorded, or None when none is needed; APPROVAL004 when
    one is needed and missing or wrong (or the allowed-signers file lies in
    ``workspace``)."""
    if not needs_signature(approver, status, via):
        return None
    if not signature:
        raise Refused(
            f"approval {row.approval_id} was not answered: answers here are signed with the "
            f"approver's SSH key, and this answer ({via.surface}) carries no signature; "
            "nothing was recorded", code="APPROVAL004",
            hint=f"the approver answers it with `rein approvals {_verb(status)} "
                 f"{row.approval_id}` in their own terminal, which signs the answer")
    from rein.config.signing import verify

    assert approver.allowed_signers is not None
    checked = verify(approver.allowed_signers, approver.id,
                     message(row, status, note=note, values=values), signature,
                     workspace=workspace)
    return {"principal": checked.principal, "fingerprint": checked.fingerprint,
            "key": checked.key_type, "signature": signature}


def verify_recorded(row: ApprovalRow, allowed_signers: str) -> dict[str, Any]:
    """Check an answer already recorded: its signature, against ``allowed_signers``, over the
    message rebuilt from the row as stored (so an edited decision, note or value, or an
    answer written without rein, fails). APPROVAL004 when it does not verify."""
    answer = row.answer or {}
    signature = answer.get("signature")
    if not isinstance(signature, str) or not signature:
        raise Refused(f"approval {row.approval_id} carries no signature", code="APPROVAL004",
                      hint="only answers given where answers are signed carry one")
    from rein.config.signing import verify

    checked = verify(allowed_signers, str(answer.get("actor") or ""),
                     message(row, row.status, note=answer.get("note"),
                             values=answer.get("values")), signature)
    return {"approval_id": row.approval_id, "status": row.status.value,
            "principal": checked.principal, "fingerprint": checked.fingerprint,
            "key": checked.key_type}


def _verb(status: ApprovalStatus) -> str:
    return {ApprovalStatus.ACCEPTED: "accept", ApprovalStatus.DECLINED: "decline"}.get(
        status, "cancel")


def given(*, approver: Approver, via: Via, state: Confinement,
          signed: Mapping[str, Any] | None = None,
          after: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """How an answer was given, as its record keeps it (``after``: :func:`after_turn`)."""
    identity: dict[str, Any]
    if signed is not None:
        identity = {"method": "ssh-signature", "principal": signed["principal"],
                    "fingerprint": signed["fingerprint"], "key": signed["key"]}
    elif via.session is not None:
        identity = {"method": "web-session", "session": via.session}
    else:
        identity = {"method": "os-user"}
    identity["account"] = approver.account
    identity["uid"] = os.getuid() if hasattr(os, "getuid") else None
    if approver.source != OS_ACCOUNT:
        identity["named_by"] = approver.source
    out: dict[str, Any] = {"surface": via.surface, "approver": approver.id,
                           "identity": identity, "confined": state.confined,
                           "terminal": has_terminal(),
                           "after_driver_turn": None if after is None else dict(after)}
    if via.standing is not None:
        out["standing"] = via.standing
    return out


def after_turn(store: Store, row: ApprovalRow, now: str) -> dict[str, Any] | None:
    """The driver turn the answer followed: the last instruction handed out or answered in
    the approval's run family, and the seconds from it to the answer (None: no driver)."""
    from rein.store.lineage import top_run_id

    turns = store.driver_turns(top_run_id(store, row.run_id))
    if not turns:
        return None
    last = max(turns, key=lambda t: t.answered_at or t.created_at)
    at = last.answered_at or last.created_at
    out: dict[str, Any] = {"node": last.node_key, "attempt": last.attempt,
                           "kind": last.kind, "status": last.status.value,
                           "issued_at": last.created_at, "submitted_at": last.answered_at}
    try:
        seconds = (_moment(now) - _moment(at)).total_seconds()
    except ValueError:
        return out
    out["seconds_after"] = round(seconds, 3)
    return out


def _moment(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


__all__ = ["SURFACES", "Via", "after_turn", "check_signature", "check_unconfined",
           "given", "message", "needs_signature", "session_tag", "verify_recorded"]
