"""The client's ``mcpServers``: launched through rein's MCP client, each only after a yes.

A server the editor names in ``session/new`` or ``session/load`` is a command rein would
run on the user's machine, so it is code execution and is treated as such:

- each launch is a ``session/request_permission`` showing the exact command, its arguments
  and the *names* of the variables it gets (never their values), with the digest of exactly
  that in its title; only the launch whose digest was answered ``allow_once`` starts
  (:class:`~rein.workers.profile_mcp.HubHost` launches nothing else);
- it is asked at the session's first prompt (an editor learns the session id from
  ``session/new``'s answer, so a question before it would name an unknown session);
- the servers' tools are decided by rein.toml's policy (``tools``, ``deny_tools``, the
  ``default`` decision; ``ask`` by default), so a session gets no more than rein allows,
  and a read-only session asks about each call even where rein.toml allows it; each call
  in ``ask`` is a permission request of its own;
- the thread records each launch (what was shown, its digest, and what came of it) as
  ``mcpLaunches``; the variables' values go to the server alone, and are redacted from its
  tool results;
- the servers stop when the session ends (the client disconnects, or loads the session
  again).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from acp import schema

from rein.acp import updates
from rein.config import Config
from rein.formats.globs import match_any
from rein.profiles.policy import Policy
from rein.tools.mcp import Gate, LaunchRequest, McpHub, McpServer
from rein.workers.profile_mcp import HubHost

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


async def launch(conn: Any, session_id: str, servers: Sequence[McpServer],
                 values: Mapping[str, str], *, config: Config, cwd: str,
                 mode: Callable[[], str]) -> HubHost | None:
    """Ask for each launch, then start the accepted ones; the host runs until closed."""
    if not servers:
        return None
    hub = McpHub(servers, gate=policy_gate(config, mode), profile=ORIGIN, trust="client",
                 workspace=Path(cwd), environ=dict(values))
    answers: dict[str, str] = {}
    for server in hub.to_json()["servers"]:
        launch = server["launch"]
        digest = str(launch["digest"])
        line = " ".join(launch["command"])
        names = ", ".join(launch["variables"])
        title = (f"Launch MCP server {server['name']!r}: {line}"
                 + (f" (with {names})" if names else "") + f" (digest {digest})?")
        call = schema.ToolCallUpdate(
            tool_call_id=f"mcp-launch:{server['name']}", title=title, kind="execute",
            status="pending", raw_input={"command": launch["command"][0],
                                         "args": launch["command"][1:],
                                         "env": launch["variables"], "digest": digest})
        response = await conn.request_permission(
            session_id=session_id, tool_call=call,
            options=updates.options(updates.QUESTION_OPTIONS))
        picked = getattr(response.outcome, "option_id", None)
        answers[digest] = "accept" if picked == "allow_once" else "decline"
        print(f"rein acp: MCP server {server['name']!r} ({digest}): "
              f"{'launching' if answers[digest] == 'accept' else 'declined'}",
              file=sys.stderr)
    host = _Host(hub, answers)
    await host.__aenter__()
    return host


class _Host(HubHost):
    """Launches a server only when the digest of its launch is the one answered yes."""

    async def _confirm(self, launch: LaunchRequest) -> str:
        return self.answers.get(launch.digest, "decline")


def recorded(host: HubHost | None, at: str) -> list[dict[str, Any]]:
    """Each launch as the thread records it: what was shown (command line, variable names,
    digest) and what came of it; never a variable's value."""
    if host is None or host.hub is None:
        return []
    return [{"server": s["name"], "command": s["launch"]["command"],
             "variables": s["launch"]["variables"], "digest": s["launch"]["digest"],
             "status": s["status"], "reason": s["reason"], "at": at}
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
