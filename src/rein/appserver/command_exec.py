"""``command/exec``: a client's standalone command, decided and run as a turn's shell tool
call is (:meth:`rein.engine.service.Harness.sessions` ``check_command``).

The command runs under a thread's sandbox and approval policy: the thread named by
``threadId`` (rein's extension of Codex's params), else what a new thread gets
(``workspace-write``, ``on-request``); ``sandboxPolicy`` replaces the sandbox, as a
request rein narrows. rein's check decides:

- **deny** (``rein.toml`` refuses it, or the sandbox does): answered with THREAD010;
  nothing runs, nobody is asked.
- **ask**: under ``approvalPolicy: never``, declined (THREAD010) without asking. Else the
  question is an entry of the approval queue under the thread (``tool_call``, bound to the
  command's digest) and, at once, an ``item/commandExecution/requestApproval`` to the
  client whose JSON-RPC id is the entry's id: the client's answer, or one given with
  ``rein approvals`` in another terminal, decides (the client then hears
  ``serverRequest/resolved``). Accepted, it runs; declined or cancelled: THREAD010.
  Without a thread there is nobody to ask: THREAD010, saying to name one.
- **allow**: it runs, confined as the shell tool runs a command (bubblewrap where usable,
  a clean environment, the workspace compared before and after).

The response comes when the command ends; the connection reads on meanwhile (it must read
the answer). Buffered only: ``tty``, ``streamStdin`` and ``streamStdoutStderr`` are refused
(THREAD007).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rein.appserver import wire
from rein.appserver.handling import Deferred
from rein.appserver.wire import MethodError
from rein.core.states import ApprovalStatus
from rein.errors import ConfigError, Refused, ReinError
from rein.protocol.items import command_actions
from rein.protocol.messages import Notification
from rein.tools.gate import Verdict
from rein.tools.shell import DEFAULT_TIMEOUT, MAX_OUTPUT_BYTES

if TYPE_CHECKING:
    from rein.appserver.handling import Connection

_UNCAPPED = 16 * 1024 * 1024  # `disableOutputCap`: still a bound, per stream
_STATUS = {"accept": ApprovalStatus.ACCEPTED, "acceptForSession": ApprovalStatus.ACCEPTED,
           "decline": ApprovalStatus.DECLINED, "cancel": ApprovalStatus.CANCELLED}
_BUFFERED_ONLY = ("tty", "streamStdin", "streamStdoutStderr")


async def command_exec(c: Connection, params: Mapping[str, Any]) -> Deferred:
    argv = params.get("command")
    if not isinstance(argv, list):
        raise MethodError(wire.INVALID_PARAMS, "command must be a list of strings")
    for name in _BUFFERED_ONLY:
        if params.get(name):
            raise ConfigError(f"command/exec {name} is not supported: rein runs a command "
                              "buffered and answers with its output", code="THREAD007",
                              hint=f"leave {name} out")
    if params.get("permissionProfile") is not None:
        raise ConfigError("command/exec permissionProfile is not supported: rein's "
                          "permissions come from rein.toml", code="THREAD007",
                          hint="name a sandboxPolicy, or leave it out")
    thread_id = params.get("threadId")
    if thread_id is not None and not isinstance(thread_id, str):
        raise MethodError(wire.INVALID_PARAMS, "threadId must be a string")
    cwd = params.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise MethodError(wire.INVALID_PARAMS, "cwd must be a string")
    timeout = _timeout(params)
    cap = _cap(params)
    sessions = c.harness.sessions
    command = sessions.check_command(c.harness.config, argv, thread_id=thread_id,
                                     sandbox=params.get("sandboxPolicy"), cwd=cwd)
    verdict = command.decision.verdict
    if verdict is Verdict.DENY:
        raise Refused(command.decision.message or f"refused {command.decision.permission}",
                      code="THREAD010", hint="rein.toml's [policy] and the sandbox decide "
                      "what runs; nothing ran")
    if verdict is Verdict.ASK and command.approval_policy == "never":
        raise Refused(f"{command.decision.permission} needs a person's approval and the "
                      "approval policy is never: declined, nothing ran", code="THREAD010",
                      hint="set the thread's approvalPolicy to on-request to be asked")
    if verdict is Verdict.ASK and thread_id is None:
        raise Refused(f"{command.decision.permission} needs a person's approval, and a "
                      "command of no thread has nobody to ask: nothing ran",
                      code="THREAD010", hint="name the thread whose client answers "
                      "(threadId), or allow the command in rein.toml's [policy]")
    env = {str(k): v for k, v in (params.get("env") or {}).items() if isinstance(v, str)} \
        if isinstance(params.get("env"), Mapping) else {}

    async def work() -> dict[str, Any]:
        if verdict is Verdict.ASK:
            assert thread_id is not None
            await _asked(c, thread_id, command)
        outcome = await sessions.run_command(command, env=env, timeout=timeout,
                                             max_output_bytes=cap)
        return {"exitCode": outcome.exit_code if outcome.exit_code is not None else -1,
                "stdout": outcome.stdout, "stderr": outcome.stderr}

    return Deferred(work())


async def _asked(c: Connection, thread_id: str, command: Any) -> None:
    """Ask about ``command`` in the queue and on the wire; return once it is accepted
    (THREAD010 when declined or cancelled). A client that leaves withdraws it."""
    sessions = c.harness.sessions
    row = sessions.ask_command(thread_id, command, origin="command/exec")
    stored = asyncio.ensure_future(sessions.launch_answered(row))
    client = c.ask("item/commandExecution/requestApproval", {
        "threadId": thread_id, "turnId": "", "itemId": f"exec:{row.approval_id}",
        "startedAtMs": int(time.time() * 1000), "reason": str(row.request["prompt"]),
        "command": command.line, "cwd": str(command.cwd), "kind": "command",
        "commandActions": command_actions(command.line),
        "availableDecisions": ["accept", "decline", "cancel"]}, request_id=row.approval_id)
    try:
        await asyncio.wait({stored, client}, return_when=asyncio.FIRST_COMPLETED)
        if not stored.done():  # the client answered first: its answer is recorded
            await _record(c, thread_id, row, _decision(client.result()))
        status = await stored
        while status is ApprovalStatus.ACCEPTED and sessions.launch_status(
                row.approval_id, usable=True) is ApprovalStatus.PENDING:
            status = await sessions.launch_answered(row)  # an answer that does not verify
    except asyncio.CancelledError:  # the client left: nothing will run it
        sessions.withdraw_launch(row, note="the client left before it was answered")
        raise
    finally:
        stored.cancel()
        if not client.done():  # answered elsewhere: the client's question is withdrawn
            client.cancel()
            c.notify(Notification(method="serverRequest/resolved", params={
                "threadId": thread_id, "requestId": row.approval_id}))
    if status is not ApprovalStatus.ACCEPTED:
        raise Refused(f"{command.decision.permission} was {status.value}: nothing ran",
                      code="THREAD010", hint="the person asked did not accept the command")


async def _record(c: Connection, thread_id: str, row: Any,
                  decision: ApprovalStatus | None) -> None:
    """Record the client's answer as any answer given here is (the surface, the account;
    refused where this server runs confined or answers are signed: then it waits for one
    given with ``rein approvals``). No answer (the client failed or left): withdrawn."""
    if decision is None:
        c.harness.sessions.withdraw_launch(row, note="the client gave no answer")
        return
    try:
        await c.harness.answer(row.approval_id, decision, digest=row.digest, go_on=False)
    except ReinError as exc:
        c.notify(Notification(method="warning", params={
            "threadId": thread_id, "message": f"{exc.code}: {exc.message}"}))


def _decision(answer: Any) -> ApprovalStatus | None:
    """What a client's answer to the command's question decides (None: no answer). An
    amendment decision (an object) accepts this command only, as for a turn's call."""
    word = answer.get("decision") if isinstance(answer, Mapping) else None
    if isinstance(word, Mapping):
        return ApprovalStatus.ACCEPTED
    return _STATUS.get(word, ApprovalStatus.DECLINED) if isinstance(word, str) else None


def _timeout(params: Mapping[str, Any]) -> float | None:
    given = params.get("timeoutMs")
    if params.get("disableTimeout"):
        if given is not None:
            raise MethodError(wire.INVALID_PARAMS, "timeoutMs and disableTimeout exclude "
                                                   "each other")
        return None
    if given is None:
        return DEFAULT_TIMEOUT
    if isinstance(given, bool) or not isinstance(given, int) or given <= 0:
        raise MethodError(wire.INVALID_PARAMS, "timeoutMs must be a positive integer")
    return given / 1000


def _cap(params: Mapping[str, Any]) -> int:
    given = params.get("outputBytesCap")
    if params.get("disableOutputCap"):
        if given is not None:
            raise MethodError(wire.INVALID_PARAMS, "outputBytesCap and disableOutputCap "
                                                   "exclude each other")
        return _UNCAPPED
    if given is None:
        return MAX_OUTPUT_BYTES
    if isinstance(given, bool) or not isinstance(given, int) or given < 0:
        raise MethodError(wire.INVALID_PARAMS, "outputBytesCap must be a non-negative "
                                               "integer")
    return min(given, _UNCAPPED)
