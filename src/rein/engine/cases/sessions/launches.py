"""A client's MCP server launch, kept in the approval queue until it is answered.

An ACP client's ``mcpServers`` are commands rein would run for a session that has no run:
each launch is an entry of the one approval queue (kind ``mcp_launch``), bound to the
launch's digest (the command line and the *names* of its variables, never their values),
so ``rein approvals list`` shows it, ``rein approvals accept|decline`` answers it from
another terminal, and the digest the answer names is the one the launch is held to.

There is no run, so the entry and its events are kept under the thread's id where a run id
would be (``approvals.run_id`` is the thread id; its ``approval/requested`` and
``approval/answered`` events are that id's log), in the manner of a graph turn's digest
question (:mod:`rein.engine.cases.sessions.digest`), which uses the turn's id: a turn's log is
the turn's feed, and a launch is not a question of the turn. The key names the turn that
asked, so a session loaded again asks again; what still waits from an earlier serving of
the session, or when the session ends unanswered, is cancelled by rein (:func:`withdraw`):
nothing is left that would launch it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from rein.core.ids import ApprovalId, RunId
from rein.core.states import ApprovalKind, ApprovalStatus
from rein.core.time import iso
from rein.engine import events
from rein.engine.run.approvals import record_answer
from rein.errors import ReinError
from rein.store.base import ApprovalRow, Store, Transition


def prompt(server: str, command: Sequence[str], variables: Sequence[str], digest: str) -> str:
    """What the person is asked: the exact command line and the variables' names."""
    names = ", ".join(variables)
    return (f"Launch MCP server {server!r}: {' '.join(command)}"
            + (f" (with {names})" if names else "") + f" (digest {digest})?")


def ask(store: Store, *, approval_id: str, thread_id: str, turn_id: str, server: str,
        launch: Mapping[str, Any], origin: str, now: str) -> ApprovalRow:
    """Queue the launch of ``server`` as shown (``launch``: the hub's ``command``,
    ``variables`` and ``digest``)."""
    digest = str(launch["digest"])
    command = [str(c) for c in launch["command"]]
    variables = [str(v) for v in launch["variables"]]
    request = {"prompt": prompt(server, command, variables, digest), "thread": thread_id,
               "turn": turn_id, "server": server, "command": command,
               "variables": variables, "origin": origin}
    row = ApprovalRow(approval_id=ApprovalId(approval_id), run_id=RunId(thread_id),
                      key=f"mcp_launch:{turn_id}:{server}@{digest[7:19]}",
                      kind=ApprovalKind.MCP_LAUNCH, status=ApprovalStatus.PENDING,
                      digest=digest, request=request, created_at=now)
    events.append(store, RunId(thread_id), events.EventType.APPROVAL_REQUESTED, {
        "approval_id": row.approval_id, "kind": row.kind.value, "key": row.key,
        "prompt": request["prompt"], "digest": digest}, now, Transition(approval=row))
    return row


async def wait(store: Store, row: ApprovalRow, after: int = 0) -> ApprovalStatus:
    """The answer, once it is given, here or in another process (read from the store;
    ``after``: only an answer recorded after that event of the thread's log)."""
    async for event in events.subscribe(store, row.run_id, after):
        if event.type == "approval/answered" and \
                event.payload.get("approval_id") == row.approval_id:
            return ApprovalStatus(str(event.payload.get("status")))
    raise AssertionError("unreachable: subscribe without until_ended never ends")


def withdraw(store: Store, row: ApprovalRow, *, note: str, now: str) -> None:
    """Cancel ``row`` if it still waits (nothing is left to launch it), by rein."""
    current = store.get_approval(row.approval_id)
    if current is None or current.status is not ApprovalStatus.PENDING:
        return
    try:
        record_answer(store, current, ApprovalStatus.CANCELLED,
                      {"actor": "rein", "note": note}, now)
    except ReinError:  # answered a moment before: that answer stands, and launches nothing
        pass


def withdraw_stale(store: Store, thread_id: str, *, now: str) -> None:
    """Cancel the thread's launches that still wait from an earlier serving of the session
    (its process died, or the session was loaded again): nothing will launch them."""
    for row in store.approvals(run_id=RunId(thread_id), status=ApprovalStatus.PENDING):
        if row.kind is ApprovalKind.MCP_LAUNCH:
            withdraw(store, row, note="the session was served again; asked anew", now=now)


def status(store: Store, approval_id: str) -> ApprovalStatus:
    """The entry's status as stored."""
    row = store.get_approval(approval_id)
    return row.status if row is not None else ApprovalStatus.PENDING


def usable(store: Store, approval_id: str, signers: Any, now: dt.datetime) -> ApprovalStatus:
    """The entry's status as a launch may act on it. Where answers are signed (``signers``,
    :class:`rein.engine.run.signed.Signers`), an answer that does not verify is refused and the
    entry waits for a person again: ``pending``."""
    row = store.get_approval(approval_id)
    if row is None:
        return ApprovalStatus.PENDING
    if signers is None or row.status is ApprovalStatus.PENDING:
        return row.status
    from rein.engine.run.signed import answer_problem, reopen

    why = answer_problem(row, signers, now=now)
    if why is None:
        return row.status
    reopen(store, row, why, now=iso(now))
    return ApprovalStatus.PENDING
