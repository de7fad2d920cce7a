"""Whether and how an OAP profile fits a node: its requirements, its refusals, its budget.

The engine's pre-flight asks :func:`profile_refusal` before anything is spent (a profile that
does not resolve, or refuses a tool or an MCP server the node needs, blocks the node with
``PROFILE001``–``PROFILE003``); the router asks :func:`profile_mcp_servers` which MCP tools a
node's profile can provide; a session narrows its attempt's budget with
:func:`narrow_budget`. Tools are compared in both spellings, so an AGS ``file_read`` meets an
OAP ``read``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.config import Config
from rein.core.usage import Budget
from rein.errors import ReinError
from rein.profiles.effective import effective_profile
from rein.profiles.policy import NodeRequirements, Policy
from rein.profiles.resolve import resolve_profile
from rein.tools.mcp import PREFIX
from rein.workers.base import AttemptRequest
from rein.workers.grants import spellings


def node_requirements(request: AttemptRequest) -> NodeRequirements:
    """The attempt's requirements as the profile API reads them (tools in both spellings)."""
    tools = tuple(dict.fromkeys(n for t in request.tools for n in spellings(t)))
    b = request.budget
    return NodeRequirements(
        tools=tools, permissions=tuple(request.permissions), network=request.network,
        workspace=request.workspace_access, max_tool_calls=b.max_tool_calls,
        max_cost_usd=b.max_cost_usd, max_wall_clock_seconds=b.max_wall_clock_seconds,
        max_agent_steps=b.max_agent_steps)


def narrow_budget(budget: Budget, profile: Mapping[str, Any]) -> Budget:
    """The attempt's budget lowered to the profile's limits (``None`` = no limit)."""
    def low(a: Any, b: Any) -> Any:
        present = [v for v in (a, b) if v is not None]
        return min(present) if present else None

    return budget.replace(
        max_tool_calls=low(budget.max_tool_calls, profile.get("max_tool_calls")),
        max_agent_steps=low(budget.max_agent_steps, profile.get("max_turns")),
        max_wall_clock_seconds=low(budget.max_wall_clock_seconds,
                                   profile.get("timeout_seconds")),
        max_cost_usd=low(budget.max_cost_usd, profile.get("max_cost_usd")))


def profile_mcp_servers(node: Mapping[str, Any], *, workspace: Path,
                        config: Config) -> frozenset[str]:
    """The MCP servers node's ``x-rein-profile`` declares (after resolution drops those with
    an unset variable); empty when it names no profile or the profile does not resolve (that
    is :func:`profile_refusal`'s PROFILE001)."""
    name = node.get("x-rein-profile")
    if name is None:
        return frozenset()
    try:
        resolved = resolve_profile(str(name), workspace=workspace, config=config)
    except ReinError:
        return frozenset()
    return frozenset(str(s["name"]) for s in resolved.mcp_servers)


def profile_refusal(nid: str, node: Mapping[str, Any], *, workspace: Path,
                    config: Config) -> tuple[str, str] | None:
    """Why node ``nid``'s ``x-rein-profile`` cannot serve it, before anything is spent:
    ``PROFILE001`` it does not resolve (missing, invalid, a required skill or store missing),
    ``PROFILE002`` it refuses a tool the node needs, ``PROFILE003`` it lacks an MCP server the
    node needs. ``None`` when it can, or the node names no profile."""
    name = node.get("x-rein-profile")
    if name is None:
        return None
    try:
        resolved = resolve_profile(str(name), workspace=workspace, config=config)
    except ReinError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        return "PROFILE001", (f"node {nid}: profile {name!r} cannot serve it: {exc.code}: "
                              f"{exc.message}{hint}")
    req = node.get("requirements") or {}
    entries = [t if isinstance(t, Mapping) else {"name": t} for t in req.get("tools") or []]
    tools = tuple(dict.fromkeys(n for e in entries for n in spellings(str(e.get("name")))))
    effective = effective_profile(resolved, Policy.from_config(config), NodeRequirements(
        tools=tools, permissions=tuple(req.get("permissions") or ()),
        network=req.get("network", "none"), workspace=req.get("workspace", "read_only")))
    servers = {str(s["name"]) for s in resolved.mcp_servers}
    for entry in entries:
        if entry.get("optional"):
            continue
        tool = str(entry.get("name"))
        if tool.startswith(PREFIX):
            server = tool.split("/")[1] if tool.count("/") >= 2 else ""
            if server not in servers:
                why = ("was dropped at resolution (an unset variable)"
                       if server in resolved.dropped_mcp_servers else "is not declared")
                return "PROFILE003", (f"node {nid} needs {tool}, but MCP server {server!r} "
                                      f"{why} in profile {resolved.name!r}")
        if not any(effective.tools.permits(n) for n in spellings(tool)):
            granted = ", ".join(effective.tools.granted) or "(none)"
            return "PROFILE002", (f"node {nid} needs tool {tool!r}, which profile "
                                  f"{resolved.name!r} does not grant (it grants: {granted})")
    for server in req.get("mcp_servers") or []:
        if str(server) not in servers:
            return "PROFILE003", (f"node {nid} needs MCP server {server!r}, which profile "
                                  f"{resolved.name!r} does not declare")
    return None
