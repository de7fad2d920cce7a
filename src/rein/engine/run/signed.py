"""Integrity at use: where approvals are signed, nothing is acted on that a person's
signature does not say was approved.

The run store (``.rein/rein.db``) lies in the workspace, and an agent's sandbox makes the
workspace writable: an agent can write an answer, or a run's approved digest, straight into
the store without rein. rein cannot stop that (its own turns, in the same sandbox, write the
store), so where answers are signed (``[approver] allowed_signers``) it checks each one
again at the moment it acts on it:

- :func:`answer_problem`: why an answer as stored may not be acted on (None: it may). An
  accept, or a decline that routes the run, must carry the signature of its actor over
  exactly this answer (:func:`rein.engine.run.answering.message`); an answer rein gave on a
  timeout must have come due. A cancel, which only stops, and the decline of an action (a
  tool call, a launch, a profile change), which only withholds it, need no signature.
- :func:`reopen`: an answer that does not verify is not acted on: the entry waits for a
  person again, with the refusal (APPROVAL005, why, the answer as it was found) kept on the
  entry and in an ``approval/refused`` event.
- :func:`run_problem`: why a run's approval does not hold. Its binding (graph digest,
  parameters, child digests) carries the signature of the person who started it over
  :func:`run_message`, which names the run; or, for the development flow's feature run, it
  names a signed plan approval that showed exactly the graph file the run runs.

Verdicts are kept for the life of an :class:`Signers` (one per engine), keyed by the
allowed-signers file's content as well, so a continuation that checks the same signature
twice runs ``ssh-keygen`` once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.states import ApprovalKind, ApprovalStatus
from rein.engine.events import EventType, append
from rein.engine.run.material import material_digest, shown_files
from rein.errors import Refused, ReinError
from rein.formats.canonical import canonical_json
from rein.store.base import ApprovalRow, RunRow, Store, Transition

if TYPE_CHECKING:
    from rein.config.signing import Verified

CODE = "APPROVAL005"
SIGNATURE = "x-rein-signature"  # in a run's binding: who signed its approval, and the signature
UNDER = "x-rein-approved-under"  # in a run's binding: the signed approval that showed its graph
RESTART_OF = "x-rein-restart-of"
# Kinds whose decline only withholds an action (nothing runs because of it).
_WITHHOLD = frozenset({ApprovalKind.TOOL_CALL, ApprovalKind.MCP_LAUNCH, ApprovalKind.PROFILE})
_CORE = ("graph_digest", "params", "children")
_MAX_LINEAGE = 64  # restarts followed back to the run whose approval was signed


class Signers:
    """The allowed-signers file a signature is checked against, and the signatures this
    process has already seen verify."""

    def __init__(self, path: str, workspace: Path | None = None) -> None:
        self.path = path
        self.workspace = workspace  # an allowed-signers file inside it verifies nothing
        self._good: dict[str, Verified] = {}

    def check(self, principal: str, message: bytes, signature: str) -> Verified:
        """Who signed ``message``, with which key; :class:`rein.config.signing.Unverified`
        (or APPROVAL004 without ssh-keygen) when it is not ``principal``'s signature."""
        from rein.config.signing import check

        seen = self._seen(principal, message, signature)
        found = self._good.get(seen)
        if found is None:
            found = check(self.path, principal, message, signature,
                          workspace=self.workspace)
            self._good[seen] = found
        return found

    def why_not(self, principal: str, message: bytes, signature: Any) -> str | None:
        """Why ``signature`` is not ``principal``'s over ``message`` (None: it is)."""
        from rein.config.signing import Unverified

        if not isinstance(signature, str) or not signature:
            return "it carries no signature"
        try:
            self.check(principal, message, signature)
        except Unverified as exc:
            return exc.why
        except Refused as exc:  # no ssh-keygen to check it with: nothing is acted on
            return exc.message
        return None

    def _seen(self, principal: str, message: bytes, signature: str) -> str:
        try:
            allowed = Path(self.path).read_bytes()
        except OSError:
            allowed = b""
        h = hashlib.sha256()
        for part in (allowed, principal.encode(), message, signature.encode()):
            h.update(len(part).to_bytes(8, "big"))
            h.update(part)
        return h.hexdigest()


def signers_of(data: Mapping[str, Any], workspace: Path | None) -> Signers | None:
    """The signers of a merged configuration's data (``[approver] allowed_signers``, read
    from the account's own files only), or None where approvals are not signed; none of
    them verifies when the file lies in ``workspace``."""
    section = data.get("approver")
    path = section.get("allowed_signers") if isinstance(section, Mapping) else None
    return Signers(str(path), workspace) if path else None


# -- answers -----------------------------------------------------------------------------

def answer_problem(row: ApprovalRow, signers: Signers, *, now: dt.datetime,
                   digest: str | None = None,
                   request: Mapping[str, Any] | None = None) -> str | None:
    """Why the answer ``row`` holds may not be acted on; None when it may (or there is none
    to act on). ``digest`` and ``request``: what the engine asks now, when it asks (the
    answer must be to exactly that material; a timeout is judged by the engine's request,
    not by the one stored)."""
    status = row.status
    if status in (ApprovalStatus.PENDING, ApprovalStatus.CANCELLED):
        return None
    if digest is not None and row.digest != digest:
        return (f"it answers material with digest {row.digest}, and the approval shows "
                f"{digest}")
    answer = row.answer or {}
    if status is ApprovalStatus.TIMED_OUT or (status is ApprovalStatus.ACCEPTED and
                                              answer.get("actor") == "rein"):
        return _timeout_problem(row, row.request if request is None else request, now)
    if status is ApprovalStatus.DECLINED and row.kind in _WITHHOLD:
        return None
    from rein.engine.run.answering import message

    return signers.why_not(str(answer.get("actor") or ""),
                           message(row, status, note=answer.get("note"),
                                   values=answer.get("values")), answer.get("signature"))


def _timeout_problem(row: ApprovalRow, request: Mapping[str, Any],
                     now: dt.datetime) -> str | None:
    """rein answers on a timeout only as the approval's ``on_timeout`` says, once due."""
    on_timeout = request.get("on_timeout", "hold")
    gives = {"approve": ApprovalStatus.ACCEPTED, "fail": ApprovalStatus.TIMED_OUT,
             "escalate": ApprovalStatus.TIMED_OUT}.get(str(on_timeout))
    timeout = request.get("timeout_seconds")
    if timeout is None or gives is not row.status:
        return (f"it says rein answered {row.status.value} on a timeout, and the approval's "
                f"on_timeout ({on_timeout}) gives no such answer")
    try:
        waited = (now - dt.datetime.fromisoformat(row.created_at)).total_seconds()
    except (TypeError, ValueError):
        return "it says it timed out, and the approval's creation time cannot be read"
    if waited < float(timeout):
        return f"it says it timed out, and its {timeout} s have not passed"
    return None


def reopen(store: Store, row: ApprovalRow, why: str, *, now: str,
           request: Mapping[str, Any] | None = None, digest: str | None = None
           ) -> ApprovalRow:
    """Not acting on ``row``'s answer: the entry waits for a person again (as the engine
    asks it: ``request`` and ``digest``), the refusal kept on it and recorded in an
    ``approval/refused`` event of its run."""
    found = {"status": row.status.value, "answer": dict(row.answer or {}),
             "answered_at": row.answered_at}
    refused = {"code": CODE, "why": why, "at": now, "found": found}
    waiting = row.replace(status=ApprovalStatus.PENDING, answer={"refused": refused},
                          answered_at=None,
                          request=dict(row.request if request is None else request),
                          digest=row.digest if digest is None else digest)
    append(store, row.run_id, EventType.APPROVAL_REFUSED,
           {"approval_id": row.approval_id, "key": row.key, "kind": row.kind.value,
            "code": CODE, "why": why, "status": row.status.value}, now,
           Transition(approval=waiting))
    return waiting


def refusal(row: ApprovalRow) -> Mapping[str, Any] | None:
    """The refusal kept on an entry that waits again (:func:`reopen`), if any."""
    found = (row.answer or {}).get("refused") if row.status is ApprovalStatus.PENDING else None
    return found if isinstance(found, Mapping) else None


# -- runs --------------------------------------------------------------------------------

def run_message(run_id: str, binding: Mapping[str, Any]) -> bytes:
    """The bytes a run's approval signs: the run, its graph digest, the digest of its
    parameters and the digest of each child document it may load."""
    params = canonical_json(dict(binding.get("params") or {}))
    return canonical_json({"rein": "run-approval/1", "run_id": run_id,
                           "graph_digest": binding.get("graph_digest"),
                           "params_digest": "sha256:" + hashlib.sha256(params).hexdigest(),
                           "children": dict(binding.get("children") or {})})


def signature_record(run_id: str, verified: Verified, signature: str) -> dict[str, Any]:
    """What a run's binding keeps of the signature of its approval."""
    return {"run_id": run_id, "principal": verified.principal,
            "fingerprint": verified.fingerprint, "key": verified.key_type,
            "signature": signature}


def run_problem(store: Store, run: RunRow, signers: Signers, *, workspace: Path,
                now: dt.datetime, data: Mapping[str, Any] | None = None) -> str | None:
    """Why ``run``'s approval, as its binding holds it, does not verify (None: it does).
    ``data``: the graph as about to run (the feature run's parameters are checked
    against it)."""
    binding = run.binding
    signed = binding.get(SIGNATURE)
    if isinstance(signed, Mapping):
        signed_run = str(signed.get("run_id") or "")
        if signed_run not in _lineage(store, run):
            return f"its approval was signed for run {signed_run or '(none)'}, not this one"
        return signers.why_not(str(signed.get("principal") or ""),
                               run_message(signed_run, binding), signed.get("signature"))
    under = binding.get(UNDER)
    if isinstance(under, Mapping):
        return _under_problem(store, run, under, signers, workspace=workspace, now=now,
                              data=data)
    return ("no person's signature approves it (it was started where approvals were not "
            "signed, or its approval was written into the store without rein)")


def approval_check(signers: Signers | None, workspace: Path
                   ) -> Callable[[Store, RunRow], str | None] | None:
    """:func:`run_problem` as a worker checks a job's top run with it, at the time it asks
    (``None`` where approvals are not signed): handed to the worker's
    :class:`~rein.executors.approved.ApprovedRuns`, below the engine."""
    if signers is None:
        return None
    held_signers = signers

    def problem(store: Store, run: RunRow) -> str | None:
        return run_problem(store, run, held_signers, workspace=workspace,
                           now=dt.datetime.now(dt.UTC))

    return problem


def _lineage(store: Store, run: RunRow) -> list[str]:
    """The run, and the runs it restarted from (``policy.resume: restart``), each bound to
    the same graph, parameters and children: a restart runs under the first one's
    approval."""
    out: list[str] = [run.run_id]
    here = run
    for _ in range(_MAX_LINEAGE):
        before = here.binding.get(RESTART_OF)
        earlier = store.get_run(str(before)) if before else None
        if earlier is None or _core(earlier.binding) != _core(run.binding):
            break
        out.append(earlier.run_id)
        here = earlier
    return out


def _core(binding: Mapping[str, Any]) -> dict[str, Any]:
    return {k: binding.get(k) for k in _CORE}


def _under_problem(store: Store, run: RunRow, under: Mapping[str, Any], signers: Signers, *,
                   workspace: Path, now: dt.datetime,
                   data: Mapping[str, Any] | None) -> str | None:
    """A run started under a signed approval that showed its graph file (the development
    flow's plan approval): that answer verifies, showed exactly this file's content, and
    the run has the graph's own parameters."""
    approval_id, name = str(under.get("approval_id") or ""), str(under.get("file") or "")
    row = store.get_approval(approval_id)
    if row is None or row.kind is not ApprovalKind.GATE or \
            row.status is not ApprovalStatus.ACCEPTED:
        return f"the approval it was started under ({approval_id}) is not an accepted gate"
    problem = answer_problem(row, signers, now=now)
    if problem is not None:
        return f"the approval it was started under ({approval_id}) does not hold: {problem}"
    if material_digest(row.request) != row.digest:
        return f"what the approval it was started under ({approval_id}) showed was changed"
    shown = (row.request.get("files") or {}).get(name)
    root = Path(workspace).resolve()
    if shown is None or (root / name).resolve() != Path(run.graph_path).resolve():
        return f"the approval it was started under ({approval_id}) did not show its graph"
    if shown_files(root, [name]).get(name) != shown:
        return f"{name} changed since {approval_id} approved it"
    if data is not None:
        from rein.engine.run.params import bind_params

        try:
            own = bind_params(data.get("params"), {}, source=run.graph_path)
        except ReinError:
            own = None
        if own != dict(run.binding.get("params") or {}):
            return f"its parameters are not those of the graph {approval_id} approved"
    return None


def started_signed(run_id: str, binding: Mapping[str, Any], principal: str,
                   signers: Signers, sign: Callable[[bytes], str]
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A new run's approval signed by ``principal`` (``sign``: with their key) and verified:
    what its binding keeps, and the identity its ``given`` records. APPROVAL004 (nothing
    recorded) when it does not verify."""
    from rein.config.signing import Unverified

    message = run_message(run_id, binding)
    signature = sign(message)
    try:
        verified = signers.check(principal, message, signature)
    except Unverified as exc:
        raise Refused(f"the approval of run {run_id} was refused: {exc.why}; nothing was "
                      "recorded", code="APPROVAL004",
                      hint="the approver signs with the key the allowed signers give "
                           "them") from None
    return ({SIGNATURE: signature_record(run_id, verified, signature)},
            {"principal": verified.principal, "fingerprint": verified.fingerprint,
             "key": verified.key_type})


def started_under(graph: str, under: ApprovalRow, workspace: Path) -> dict[str, Any]:
    """What a run of ``graph`` started under the signed approval ``under`` keeps of it: the
    approval, and the graph file as the approval named it when it showed it (APPROVAL005
    when it did not show it). The approval itself is checked by :func:`run_problem` as the
    run starts and every time it continues."""
    path = Path(graph).resolve()
    root = Path(workspace).resolve()
    name = next((str(n) for n in (under.request.get("files") or {})
                 if (root / str(n)).resolve() == path), None)
    if name is None:
        raise Refused(f"approval {under.approval_id} did not show {graph}; nothing was "
                      "started", code=CODE, hint="a person approves the graph file itself")
    return {UNDER: {"approval_id": under.approval_id, "file": name}}


def refused_run(run: RunRow, why: str) -> Refused:
    """APPROVAL005 for a run whose approval does not verify: nothing of it runs."""
    return Refused(f"run {run.run_id} is not continued: {why}; nothing ran", code=CODE,
                   hint=f"a person who approves it as the files are now runs `rein resume "
                        f"{run.run_id} --force` in their own terminal, which signs its "
                        "approval; or starts a new run with `rein run`")


def held(store: Store, run: RunRow, override: dict[str, Any] | None, signers: Signers, *,
         workspace: Path, now: dt.datetime, data: Mapping[str, Any] | None, force: bool,
         sign: Callable[[bytes], str] | None, actor: str) -> dict[str, Any] | None:
    """The signature check of a continuation, after RT053's (``override``: what a forced
    continuation would bind). Without ``force``, APPROVAL005 unless the run's approval
    verifies. With ``force``, the files as they are now are approved again, signed by the
    person forcing (``sign``; APPROVAL004 when this process cannot sign): what to record."""
    if override is None:
        problem = run_problem(store, run, signers, workspace=workspace, now=now, data=data)
        if problem is None:
            return None
        if not force:
            raise refused_run(run, problem)
        override = _core(run.binding)
    if sign is None:
        raise Refused(f"run {run.run_id} was not continued: a forced continuation approves "
                      "the files again, approvals here are signed, and this process cannot "
                      "sign; nothing was recorded", code="APPROVAL004",
                      hint=f"a person runs `rein resume {run.run_id} --force` in their own "
                           "terminal, where their key signs it")
    message = run_message(run.run_id, override)
    signature = sign(message)
    from rein.config.signing import Unverified

    try:
        verified = signers.check(actor, message, signature)
    except Unverified as exc:
        raise Refused(f"the approval of run {run.run_id} was not signed by {actor}'s key: "
                      f"{exc.why}; nothing was recorded", code="APPROVAL004",
                      hint="the approver signs with the key the allowed signers give "
                           "them") from None
    return {**override, SIGNATURE: signature_record(run.run_id, verified, signature)}


__all__ = ["CODE", "RESTART_OF", "SIGNATURE", "UNDER", "Signers", "answer_problem",
           "approval_check", "held",
           "refusal", "refused_run", "reopen", "run_message", "run_problem",
           "signature_record", "signers_of", "started_signed", "started_under"]
