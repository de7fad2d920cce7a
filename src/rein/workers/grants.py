"""Effective permissions of one attempt: node ∩ profile ∩ rein's policy ∩ sandbox.

DESIGN.md decision 5. The node's requirements (``request.tools``, ``request.permissions``)
are the widest anything can be; each ceiling — rein's ``[policy]`` from ``rein.toml``, and
the effective OAP profile when one serves the node — can only take away from them:

- **tools**: a tool stays offered when one of its spellings (AGS ``file_write`` / OAP
  ``write``) matches the ceiling's ``tools`` and none matches its ``deny_tools``;
- **decisions**: ``edit``, ``shell`` and ``network`` of ``deny`` drop every grant of the
  matching scopes (``fs:write``/``fs:delete``; ``shell:``/``process:``; ``net:``); ``ask``
  adds an ask rule over the whole scope, so each such call waits for a person;
- **roots**: ``write_roots`` / ``read_roots`` narrow ``fs`` grants to paths inside them;
  ``deny_paths`` become deny patterns, which win over any grant;
- **hosts**: ``allow_hosts`` narrows ``net:fetch`` grants to origins on those hosts.

The sandbox policy is the fourth ceiling and is applied by the toolbox at every call
(:class:`rein.tools.gate.ToolPolicy`). ``default`` is not applied to the built-in tools:
reads are governed by the node's ``fs:read`` grants and ``read_roots``; ``default`` covers
tools outside the three categories, which the model worker does not offer.

The result is computed once per attempt and recorded in the run as a notice item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from rein.core.frozen import Frozen
from rein.formats.globs import covers, match_any, normalize_relative, path_within
from rein.profiles.policy import Policy
from rein.tools.catalog import ALIASES, kind_of
from rein.tools.permissions import Permission

_SCOPES = {
    "edit": (("fs", "write"), ("fs", "delete"), ("fs", "create")),
    "shell": (("shell", None), ("process", None)),
    "network": (("net", None),),
}
_ASK = {"edit": ("fs:write", "fs:delete"), "shell": ("shell:exec",), "network": ("net:fetch",)}


class AttemptGrants(Frozen):
    """What one attempt may do, after every ceiling. ``narrowed`` says what was taken away."""

    tools: tuple[str, ...]
    grants: tuple[str, ...]
    denied: tuple[str, ...]
    ask: tuple[str, ...]
    narrowed: tuple[Mapping[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"tools": list(self.tools), "grants": list(self.grants),
                "denied": list(self.denied), "ask": list(self.ask),
                "narrowed": [dict(n) for n in self.narrowed]}


def spellings(tool: str) -> tuple[str, ...]:
    """The tool's name and, for a built-in, every other name of the same tool."""
    kind = kind_of(tool)
    if kind is None:
        return (tool,)
    return (tool, *(name for name, k in ALIASES.items() if k is kind and name != tool))


def attempt_grants(tools: Iterable[str], permissions: Iterable[str],
                   ceilings: Sequence[tuple[str, Policy]], *, denied: Iterable[str] = (),
                   ask: Iterable[str] = ()) -> AttemptGrants:
    """Narrow the node's tools and permissions by each ``(label, ceiling)`` in turn."""
    offered = list(tools)
    grants = [Permission.parse(p) for p in permissions]
    deny = list(dict.fromkeys(denied))
    asks = list(dict.fromkeys(ask))
    notes: list[dict[str, str]] = []
    for label, policy in ceilings:
        for tool in list(offered):
            names = spellings(tool)
            if not any(match_any(policy.tools, n) for n in names) or any(
                    match_any(policy.deny_tools, n) for n in names):
                offered.remove(tool)
                notes.append({"tool": tool, "by": label, "reason": "not in its tools"})
        for key, scopes in _SCOPES.items():
            decision = policy.permissions.get(key, "allow")
            if decision == "deny":
                for g in [g for g in grants if _in_scopes(g, scopes)]:
                    grants.remove(g)
                    notes.append({"grant": str(g), "by": label, "reason": f"{key}: deny"})
            elif decision == "ask":
                asks.extend(a for a in _ASK[key] if a not in asks)
        grants = _roots(grants, "write", policy.write_roots, label, notes)
        grants = _roots(grants, "read", policy.read_roots, label, notes)
        for path in policy.deny_paths:
            p = normalize_relative(path)
            for action in ("read", "write"):
                for pattern in (f"fs:{action}:{p}", f"fs:{action}:{p}/**"):
                    if pattern not in deny:
                        deny.append(pattern)
        grants = _hosts(grants, policy.allow_hosts, label, notes)
    return AttemptGrants(tools=tuple(offered), grants=tuple(dict.fromkeys(map(str, grants))),
                         denied=tuple(deny), ask=tuple(asks), narrowed=tuple(notes))


def _in_scopes(grant: Permission, scopes: Iterable[tuple[str, str | None]]) -> bool:
    return any(grant.scope == s and (a is None or grant.action == a) for s, a in scopes)


def _roots(grants: list[Permission], action: str, roots: Iterable[str], label: str,
           notes: list[dict[str, str]]) -> list[Permission]:
    """``fs:<action>`` grants kept inside ``roots``; a wider grant becomes one per root."""
    roots = [normalize_relative(r) for r in roots]
    if "." in roots:
        return grants
    out: list[Permission] = []
    for g in grants:
        if (g.scope, g.action) != ("fs", action):
            out.append(g)
            continue
        target = g.target or "**"
        prefix = target.split("*", 1)[0].rstrip("/")  # the literal directory part
        if prefix and any(path_within(r, prefix) for r in roots):
            out.append(g)
            continue
        narrowed = [Permission(scope="fs", action=action, target=f"{r}/**") for r in roots
                    if covers(target, f"{r}/**")]
        out.extend(narrowed)
        notes.append({"grant": str(g), "by": label,
                      "reason": f"{action}_roots {', '.join(roots) or '(none)'}"})
    return out


def _hosts(grants: list[Permission], hosts: Iterable[str], label: str,
           notes: list[dict[str, str]]) -> list[Permission]:
    hosts = list(hosts)
    if "*" in hosts:
        return grants
    out: list[Permission] = []
    for g in grants:
        if g.scope != "net":
            out.append(g)
            continue
        if g.target in (None, "*"):
            out.extend(Permission(scope="net", action=g.action, target=f"https://{h}")
                       for h in hosts)
            notes.append({"grant": str(g), "by": label,
                          "reason": f"allow_hosts {', '.join(hosts) or '(none)'}"})
            continue
        host = urlsplit(g.target).hostname or ""
        if match_any(hosts, host):
            out.append(g)
        else:
            notes.append({"grant": str(g), "by": label, "reason": "host not in allow_hosts"})
    return out
