"""A node's requirements against what this harness can and may grant (AGS §17.7 step 2).

Before anything is spent, a task or decision node is refused (``blocked``) when:

- a non-optional tool nobody can provide, after trying its ``alternatives``, or a required
  MCP server no worker offers for this node (``provides_mcp_server(name, node)``): **RT012**.
  A tool is provided when it is one of rein's built-in tools or a worker says it provides it
  for this node (``provides_tool(name, node)``), and rein's policy allows it
  (``[policy] tools`` / ``deny_tools``);
- a requested permission lies outside rein's policy (``rein.toml`` ``[policy]``): **PERM002**.
- a worker's own check (``refuse_node(nid, node)``) refuses the node's setup: the profile
  worker's ``PROFILE001``–``PROFILE003`` for an ``x-rein-profile`` that is missing, invalid,
  or refuses the node's tools.

The policy is a ceiling, never a grant: the node's request is compared with it and refused
when it asks for more; nothing here merges the two. ``ask`` in the policy does not refuse:
each call is asked about when it happens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from rein.core.frozen import Frozen
from rein.errors import ConfigError
from rein.formats.ags.spec import NodeSpec
from rein.formats.globs import covers, match_any, path_within
from rein.profiles.policy import Policy, decision_min
from rein.tools.catalog import MCP_PREFIX, kind_of
from rein.tools.permissions import Permission

_EDIT_ACTIONS = {"fs": ("write", "delete", "create"), "git": ("commit", "push")}


class Refusal(Frozen):
    """Why a node cannot start: a stable code and a message naming what is missing."""

    code: str
    message: str


def check_requirements(spec: NodeSpec, policy: Policy, workers: Iterable[Any]
                       ) -> Refusal | None:
    """The first reason node ``spec.id`` cannot start here, or ``None``."""
    nid, node, req = spec.id, spec.raw, spec.requirements
    workers = tuple(workers)
    tools = req.tools
    for entry in [e for e in tools if not _names_mcp(e)]:
        refusal = _tool(nid, entry, node, policy, workers)
        if refusal:
            return refusal
    for text in req.permissions:
        problem = _permission(text, policy)
        if problem:
            return Refusal(code="PERM002", message=f"node {nid} asks for {text!r}, which "
                           f"rein's policy does not allow: {problem}")
    if req.network in ("restricted", "full") and policy.permissions["network"] == "deny":
        return Refusal(code="PERM002", message=f"node {nid} asks for network "
                       f"{req.network!r}; rein's policy denies network access")
    if req.workspace == "read_write" and policy.permissions["edit"] == "deny":
        return Refusal(code="PERM002", message=f"node {nid} asks for a writable workspace; "
                       "rein's policy denies edits")
    for worker in workers:
        # A worker that can judge the node's own setup (a profile worker: x-rein-profile
        # missing, invalid or refusing its tools) answers once for all of its kind.
        check = getattr(worker, "refuse_node", None)
        if callable(check):
            found = check(nid, node)
            if found is not None:
                return Refusal(code=found[0], message=found[1])
            break
    # After the workers' own checks, so a node whose profile lacks a server hears why
    # (PROFILE001/PROFILE003) rather than only that nobody offers it.
    for entry in [e for e in tools if _names_mcp(e)]:
        refusal = _tool(nid, entry, node, policy, workers)
        if refusal:
            return refusal
    for server in req.mcp_servers:
        if not any(_offers(w, "provides_mcp_server", server, node) for w in workers):
            return Refusal(code="RT012", message=f"node {nid} needs MCP server {server!r}, "
                           "which no configured worker offers")
    return None


def _names_mcp(entry: Any) -> bool:
    name = entry if isinstance(entry, str) else str(entry.get("name"))
    return name.startswith(MCP_PREFIX)


def _tool(nid: str, entry: Any, node: Mapping[str, Any], policy: Policy,
          workers: tuple[Any, ...]) -> Refusal | None:
    if isinstance(entry, str):
        name, optional, alternatives = entry, False, []
    else:
        name = str(entry.get("name"))
        optional = bool(entry.get("optional", False))
        alternatives = [str(a) for a in entry.get("alternatives") or []]
    if optional or any(_available(t, node, policy, workers) for t in [name, *alternatives]):
        return None
    tried = ", ".join(repr(t) for t in [name, *alternatives])
    return Refusal(code="RT012", message=f"node {nid} needs tool {tried}; none is provided "
                   "here or allowed by rein's policy")


def _available(tool: str, node: Mapping[str, Any], policy: Policy,
               workers: tuple[Any, ...]) -> bool:
    if match_any(policy.deny_tools, tool) or not any(covers(p, tool) for p in policy.tools):
        return False
    return kind_of(tool) is not None or any(
        _offers(w, "provides_tool", tool, node) for w in workers)


def _offers(worker: Any, method: str, *args: Any) -> bool:
    check = getattr(worker, method, None)
    return bool(check(*args)) if callable(check) else False


def _permission(text: str, policy: Policy) -> str | None:
    """Why ``text`` is outside ``policy`` (None when it is inside)."""
    try:
        perm = Permission.parse(text)
    except ConfigError as exc:
        return exc.message
    key = _decision_key(perm)
    if key is not None and decision_min(policy.permissions[key]) == "deny":
        return f"policy.{key} is deny"
    target = perm.target
    if perm.scope == "fs" and target:
        roots = policy.read_roots if perm.action == "read" else policy.write_roots
        name = "read_roots" if perm.action == "read" else "write_roots"
        if not any(path_within(root, target) for root in roots):
            return f"{target} is outside policy.{name} {list(roots)}"
        if perm.action != "read" and any(path_within(d, target) for d in policy.deny_paths):
            return f"{target} is under policy.deny_paths {list(policy.deny_paths)}"
    if perm.scope == "net" and target and target != "*":
        host = urlsplit(target if "://" in target else f"https://{target}").hostname or target
        if not match_any(policy.allow_hosts, host):
            return f"{host} is not in policy.allow_hosts {list(policy.allow_hosts)}"
    return None


def _decision_key(perm: Permission) -> str | None:
    if perm.scope in ("shell", "process"):
        return "shell"
    if perm.action in _EDIT_ACTIONS.get(perm.scope, ()):
        return "edit"
    if perm.scope == "net":
        return "network"
    return None


def default_policy() -> Policy:
    """rein's built-in policy, for engines built without a ``rein.toml``."""
    return Policy.from_mapping({})
