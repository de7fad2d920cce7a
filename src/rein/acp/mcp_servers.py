"""The client's ``mcpServers``: launched through rein's MCP client, each only after a yes.

A server the editor names in ``session/new`` or ``session/load`` is a command rein would
run on the user's machine, so it is code execution and is treated as such:

- each launch is an entry of rein's approval queue (kind ``mcp_launch``, kept under the
  thread: :mod:`rein.engine.cases.sessions.launches`, through ``harness.sessions``) and, at the
  same time, a
  ``session/request_permission`` showing the exact command, its arguments and the *names*
  of the variables it gets (never their values), with the digest of exactly that in its
  title. The first answer holds: ``allow_once``/``reject_once`` on the wire is recorded
  through the Harness's answer path, held to that digest; ``rein approvals accept|decline``
  (another process) drops the pending request and the editor is told. A withdrawn
  request is a cancel, not a decline; an entry nothing would launch any more (the session
  ended, or was served again) is cancelled by rein. Only the launch whose digest was accepted starts
  (:class:`~rein.workers.profile_mcp.HubHost` launches nothing else);
- it is asked at the session's first prompt (an editor learns the session id from
  ``session/new``'s answer, so a question before it would name an unknown session);
- the servers' tools are decided by rein.toml's policy (``tools``, ``deny_tools``, the
  ``default`` decision; ``ask`` by default), so a session gets no more than rein allows,
  and a read-only session asks about each call even where rein.toml allows it; each call
  in ``ask`` is a permission request of its own;
- the thread records each launch (what was shown, its digest, its approval id, and what
  came of it) as ``mcpLaunches``; the variables' values go to the server alone, and are redacted from its
  tool results;
- the servers stop when the session ends (the client disconnects, or loads the session
  again).
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import acp
from acp import schema

from rein.acp import updates
from rein.config import Config
from rein.core.states import ApprovalStatus
from rein.errors import ReinError
from rein.formats.globs import match_any
from rein.profiles.policy import Policy
from rein.tools.mcp import Gate, LaunchRequest, McpHub, McpServer
from rein.workers.profile_mcp import HubHost

if TYPE_CHECKING:
    from rein.engine.service import ApprovalRow, Harness

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")  # what rein's MCP client passes on
ORIGIN = "the ACP client"  # shown where a profile's name would be


class Invalid(ValueError):
    """A client's server list rein cannot launch as given (an invalid-params error)."""


def checked(servers: Sequence[Any] | None) -> tuple[list[McpServer], dict[str, str]]:
    """The client's stdio servers as rein's, and the variables' values (kept apart: they
    go to the server, never into a request, a log or the store)."""
    out: list[McpServer] = []
    values: dict[str, str] = {}
    for server in servers or ():
        name = str(getattr(server, "name", ""))
        if not isinstance(server, schema.McpServerStdio):
            raise Invalid(f"MCP server {name!r}: rein acp launches stdio servers only "
                          "(its initialize says http and sse are not supported)")
        if not _NAME.match(name) or any(s.name == name for s in out):
            raise Invalid(f"MCP server name {name!r} must be unique, 1-64 letters, digits, "
                          "'_' or '-'")
        env: dict[str, str] = {}
        for variable in server.env or ():
            if not _VARIABLE.match(variable.name):
                raise Invalid(f"MCP server {name!r}: variable {variable.name!r} must be "
                              "upper-case letters, digits and '_'")
            if values.get(variable.name, variable.value) != variable.value:
                raise Invalid(f"MCP servers give variable {variable.name!r} two values")
            env[variable.name] = f"${{{variable.name}}}"
            values[variable.name] = variable.value
        out.append(McpServer(name=name, transport="stdio", command=server.command,
                             args=tuple(server.args or ()), env=env))
    return out, values


def policy_gate(config: Config, mode: Callable[[], str]) -> Gate:
    """rein.toml's decision for a client server's tool ``mcp/<server>/<tool>``, asked of a
    person in a read-only session whatever rein.toml allows: rein cannot tell what a
    server's tool changes. ``mode`` is the session's mode at the time of the call."""
    policy = Policy.from_config(config)

    def gate(name: str) -> str:
        if not match_any(policy.tools, name) or match_any(policy.deny_tools, name):
            return "deny"
        decision = str(policy.permissions.get("default", "ask"))
        return "ask" if decision == "allow" and mode() == "read-only" else decision

    return gate


async def launch(conn: Any, harness: Harness, session_id: str, turn_id: str,
                 servers: Sequence[McpServer], values: Mapping[str, str], *, cwd: str,
                 mode: Callable[[], str]) -> tuple[HubHost | None, dict[str, str]]:
    """Ask for each launch, then start the accepted ones; the host runs until closed, and
    each server's approval id."""
    if not servers:
        return None, {}
    hub = McpHub(servers, gate=policy_gate(harness.config, mode), profile=ORIGIN,
                 trust="client", workspace=Path(cwd), environ=dict(values))
    answers: dict[str, str] = {}
    queued: dict[str, str] = {}
    # Every launch is queued before the editor is asked about the first, so the queue shows
    # them all at once and may answer them in any order.
    sessions = harness.sessions
    sessions.withdraw_stale_launches(session_id)
    rows = [sessions.ask_launch(session_id, turn_id, str(server["name"]), server["launch"],
                                origin=ORIGIN)
            for server in hub.to_json()["servers"]]
    try:
        for row in rows:
            queued[str(row.request["server"])] = row.approval_id
            status = await _decided(conn, harness, session_id, row)
            answers[row.digest] = "accept" if status is ApprovalStatus.ACCEPTED else "decline"
            print(f"rein acp: MCP server {row.request['server']!r} ({row.digest}, "
                  f"{row.approval_id}): "
                  f"{'launching' if status is ApprovalStatus.ACCEPTED else status.value}",
                  file=sys.stderr)
    finally:  # the session ended (or failed) before every launch was answered
        for row in rows:
            sessions.withdraw_launch(row, note="the ACP session ended unanswered")
    host = _Host(hub, answers)
    await host.__aenter__()
    return host, queued


_ASKED_AGAIN = 3  # answers that do not verify, each refused, before the launch is given up


async def _decided(conn: Any, harness: Harness, session_id: str, row: ApprovalRow
                   ) -> ApprovalStatus:
    """The answer the launch acts on. Where answers are signed, one that does not verify
    (written into the store without rein) is refused and the question asked again; after
    :data:`_ASKED_AGAIN` such answers the server is not launched."""
    sessions = harness.sessions
    status = sessions.launch_status(row.approval_id, usable=True)
    for _ in range(_ASKED_AGAIN):
        if status is not ApprovalStatus.PENDING:
            return status
        await _answered(conn, harness, session_id, row)  # the editor's or the queue's
        status = sessions.launch_status(row.approval_id, usable=True)
    print(f"rein acp: MCP launch {row.approval_id}: no answer that verifies; not launched",
          file=sys.stderr)
    return ApprovalStatus.PENDING


async def _answered(conn: Any, harness: Harness, session_id: str, row: ApprovalRow
                    ) -> ApprovalStatus:
    """The queue entry's answer: the editor's, or one given in rein's queue meanwhile
    (``rein approvals accept|decline``, the web console), whichever comes first. The
    editor's goes through the Harness's answer path, held to the digest it was shown."""
    request = row.request
    call = schema.ToolCallUpdate(
        tool_call_id=f"mcp-launch:{request['server']}", title=str(request["prompt"]),
        kind="execute", status="pending",
        raw_input={"command": request["command"][0], "args": request["command"][1:],
                   "env": request["variables"], "digest": row.digest,
                   "approval": row.approval_id})
    asked = asyncio.ensure_future(conn.request_permission(
        session_id=session_id, tool_call=call,
        options=updates.options(updates.QUESTION_OPTIONS)))
    sessions = harness.sessions
    queue = asyncio.ensure_future(sessions.launch_answered(row))
    try:
        await asyncio.wait({asked, queue}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        queue.cancel()
    if not asked.done():  # answered in the queue: the editor's question is moot
        asked.cancel()
        status = sessions.launch_status(row.approval_id)
        word = "accepted" if status is ApprovalStatus.ACCEPTED else status.value
        await conn.session_update(session_id=session_id, update=acp.update_tool_call(
            call.tool_call_id,
            status="completed" if status is ApprovalStatus.ACCEPTED else "failed",
            title=f"{call.title} {word} in rein's approval queue ({row.approval_id})"))
        return status
    try:
        picked = getattr(asked.result().outcome, "option_id", None)
    except Exception as exc:  # noqa: BLE001 - no answer (the editor failed, or went away)
        print(f"rein acp: MCP launch {row.approval_id}: no answer ({exc})", file=sys.stderr)
        sessions.withdraw_launch(row, note="the ACP client gave no answer")
        return sessions.launch_status(row.approval_id)
    # A withdrawn question (the prompt cancelled) is a cancel, not a decline.
    answer = {"allow_once": ApprovalStatus.ACCEPTED,
              "reject_once": ApprovalStatus.DECLINED}.get(str(picked),
                                                          ApprovalStatus.CANCELLED)
    try:
        await harness.answer(row.approval_id, answer, digest=row.digest, go_on=False,
                             note="session/request_permission")
    except ReinError as exc:  # answered in the queue a moment before: that answer holds
        if exc.code != "APPROVAL_ANSWERED":
            raise
    return sessions.launch_status(row.approval_id)


class _Host(HubHost):
    """Launches a server only when the digest of its launch is the one answered yes."""

    async def _confirm(self, launch: LaunchRequest) -> str:
        return self.answers.get(launch.digest, "decline")


def recorded(host: HubHost | None, queued: Mapping[str, str], at: str
             ) -> list[dict[str, Any]]:
    """Each launch as the thread records it: what was shown (command line, variable names,
    digest), its approval, and what came of it; never a variable's value."""
    if host is None or host.hub is None:
        return []
    return [{"server": s["name"], "command": s["launch"]["command"],
             "variables": s["launch"]["variables"], "digest": s["launch"]["digest"],
             "approval": queued.get(s["name"]), "status": s["status"],
             "reason": s["reason"], "at": at}
            for s in host.hub.to_json()["servers"]]


def said(host: HubHost | None) -> str:
    """What the session's MCP servers came to, in one line for the editor."""
    if host is None or host.hub is None:
        return ""
    parts = []
    for server in host.hub.to_json()["servers"]:
        state = server["status"]
        if state == "running":
            tools = ", ".join(t["wire_name"] for t in server["tools"]) or "no tools"
            parts.append(f"{server['name']}: running ({tools})")
        else:
            parts.append(f"{server['name']}: {state}"
                         + (f" ({server['reason']})" if server["reason"] else ""))
    return "MCP servers: " + "; ".join(parts) + "\n"
