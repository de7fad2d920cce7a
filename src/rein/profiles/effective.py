"""The effective profile (OAP §5.3, §7.2): a resolved profile intersected with rein's policy.

Privilege only narrows. Every value here is the minimum (decisions: ``deny`` < ``ask`` <
``allow``; budgets: the smallest limit) or the intersection (tools, roots, hosts, scopes) of
what the profile asks, what the policy allows and, when given, what an AGS node requires.
Nothing in ``state`` is read: learned text can never change tools or permissions (T4).
Every difference between what was requested and what was granted is an :class:`Adjustment`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rein.core.frozen import Frozen, field
from rein.errors import Refused
from rein.formats.globs import covers, match_any, path_within
from rein.profiles.model import ModelChoice, resolve_model
from rein.profiles.policy import (
    BUDGET_KEYS,
    MEMORY_MODES,
    PERMISSION_KEYS,
    WRITEBACK_MODES,
    Decision,
    NodeRequirements,
    Policy,
    budget_min,
    decision_min,
    narrowest,
)
from rein.profiles.records import Adjustment
from rein.profiles.resolve import ResolvedProfile


class ToolGrant(Frozen):
    """Which tools may be called. A name is granted when every allow set matches it and no
    deny pattern does; ``granted`` lists the patterns for display."""

    allow_sets: tuple[tuple[str, ...], ...]
    deny: tuple[str, ...]
    granted: tuple[str, ...]
    mcp_filters: Mapping[str, tuple[tuple[str, ...] | None, tuple[str, ...]]] = field(
        default_factory=dict)  # server → (its tools.allow or None, its tools.deny)

    def permits(self, tool: str) -> bool:
        """Whether ``tool`` may be called at all (its decision may still be ``ask``)."""
        if match_any(self.deny, tool) or not all(match_any(s, tool) for s in self.allow_sets):
            return False
        if tool.startswith("mcp/") and tool.count("/") >= 2:
            server, name = tool.split("/", 2)[1:]
            if server in self.mcp_filters:
                allow, deny = self.mcp_filters[server]
                return (allow is None or match_any(allow, name)) and not match_any(deny, name)
        return True


class EffectiveProfile(Frozen):
    """What a session of this profile may do, fixed for the session (L1-I10)."""

    resolved: ResolvedProfile
    tools: ToolGrant
    permissions: Mapping[str, Decision]
    rules: tuple[Mapping[str, Any], ...]
    read_roots: tuple[str, ...]
    write_roots: tuple[str, ...]
    deny_paths: tuple[str, ...]
    network: Decision
    allow_hosts: tuple[str, ...]
    model: ModelChoice
    budgets: Mapping[str, Any]
    memory_mode: str
    memory_scopes: tuple[str, ...]
    writeback: str
    subagents: tuple[str, ...]
    subagent_max_depth: int
    subagent_max_concurrent: int
    depth: int = 0
    adjustments: tuple[Adjustment, ...] = ()

    @property
    def name(self) -> str:
        return self.resolved.name

    def decide(self, tool: str, action: str = "*", target: str = "*") -> Decision:
        """The decision for one tool call: profile rules (first match) and keys, each
        narrowed by rein's policy as recorded here; ungranted tools are denied."""
        if not self.tools.permits(tool):
            return "deny"
        key = _category(tool)
        ceiling = self.permissions[key] if key in self.permissions else self.permissions[
            "default"]
        for rule in self.rules:
            if (match_any([rule.get("tool", "*")], tool) and match_any(
                    [rule.get("action", "*")], action) and match_any(
                    [rule.get("target", "*")], target)):
                return decision_min(rule["decision"], ceiling)
        return ceiling

    def as_policy(self) -> Policy:
        """This profile's grants as the ceiling for the subagents it delegates to (T7)."""
        return Policy(
            permissions=dict(self.permissions), tools=self.tools.granted,
            deny_tools=self.tools.deny, read_roots=self.read_roots, write_roots=self.write_roots,
            deny_paths=self.deny_paths, allow_hosts=self.allow_hosts,
            models=("**",) if self.model.provider is None else (
                f"{self.model.provider}/{self.model.id}",),
            memory_mode=self.memory_mode, memory_scopes=self.memory_scopes,
            writeback=self.writeback, budgets=dict(self.budgets),
            subagent_max_depth=self.subagent_max_depth,
            subagent_max_concurrent=self.subagent_max_concurrent,
            subagents=self.subagents, depth=self.depth + 1)

    def to_json(self) -> dict[str, Any]:
        """The record a run keeps (and ``rein profile effective --json`` prints)."""
        return {
            "profile": self.resolved.record(),
            "tools": {"granted": list(self.tools.granted), "deny": list(self.tools.deny)},
            "permissions": dict(self.permissions), "rules": [dict(r) for r in self.rules],
            "filesystem": {"read_roots": list(self.read_roots),
                           "write_roots": list(self.write_roots),
                           "deny_paths": list(self.deny_paths)},
            "network": {"decision": self.network, "allow_hosts": list(self.allow_hosts)},
            "model": self.model.to_json(), "budgets": dict(self.budgets),
            "memory": {"mode": self.memory_mode, "scopes": list(self.memory_scopes)},
            "writeback": self.writeback,
            "subagents": {"allow": list(self.subagents), "max_depth": self.subagent_max_depth,
                          "max_concurrent": self.subagent_max_concurrent, "depth": self.depth},
            "adjustments": [a.to_json() for a in self.adjustments],
        }


_CATEGORIES = {"shell": "shell", "bash": "shell", "exec": "shell", "edit": "edit",
               "write": "edit", "delete": "edit", "fetch": "network", "web": "network",
               "http": "network"}


def _category(tool: str) -> str:
    head = tool.split("/", 1)[0]
    return _CATEGORIES.get(head, "default")


def intersect(a: tuple[str, ...], b: tuple[str, ...], *, paths: bool = False) -> tuple[str, ...]:
    """Patterns both sides allow: each side's patterns the other side covers."""
    test = path_within if paths else covers
    out = [x for x in a if any(test(y, x) for y in b)]
    out += [y for y in b if y not in out and any(test(x, y) for x in a)]
    return tuple(dict.fromkeys(out))


def effective_profile(resolved: ResolvedProfile, policy: Policy,
                      node_requirements: NodeRequirements | None = None, *,
                      can_serve: Callable[[str, str], bool] | None = None) -> EffectiveProfile:
    """Intersect ``resolved`` with ``policy`` (and an AGS node's requirements, if any).

    Tools and permissions intersect, budgets take the minimum. ``can_serve(provider, id)``
    says which models rein can reach (default: every model the policy allows).
    """
    node = node_requirements or NodeRequirements()
    adj: list[Adjustment] = list(resolved.adjustments)
    spec = resolved.spec
    tools = _tools(resolved, policy, node, adj)
    perms_spec = spec.get("permissions") or {}
    permissions: dict[str, Decision] = {}
    for key in PERMISSION_KEYS:
        asked = perms_spec.get(key, perms_spec.get("default") if key != "default" else None)
        granted = decision_min(asked, policy.permissions[key], node.decision(key))
        permissions[key] = granted
        if asked is not None and granted != asked:
            adj.append(Adjustment(field=f"/spec/permissions/{key}", requested=asked,
                                  granted=granted, reason="narrowed by rein's policy"
                                  if granted == policy.permissions[key] else
                                  "narrowed by the node's requirements"))
    fs = perms_spec.get("filesystem") or {}
    read_roots = _roots("read_roots", fs, policy.read_roots, adj)
    write_roots = _roots("write_roots", fs, policy.write_roots, adj)
    if node.workspace == "none":
        read_roots = write_roots = ()
    elif node.workspace == "read_only":
        write_roots = ()
    deny_paths = tuple(dict.fromkeys([*policy.deny_paths, *(fs.get("deny_paths") or [])]))
    hosts = tuple(perms_spec.get("allow_hosts") or ()) or policy.allow_hosts
    allow_hosts = intersect(hosts, policy.allow_hosts)
    if set(allow_hosts) != set(hosts):
        adj.append(Adjustment(field="/spec/permissions/allow_hosts", requested=list(hosts),
                              granted=list(allow_hosts), reason="outside rein's allow_hosts"))
    budgets = {}
    node_budgets = node.budgets()
    runtime, ctx_budget = spec.get("runtime") or {}, (spec.get("context") or {}).get(
        "budget") or {}
    for key in BUDGET_KEYS:
        asked = runtime.get(key, ctx_budget.get(key))
        budgets[key] = budget_min(asked, policy.budget(key), node_budgets.get(key))
        if asked is not None and budgets[key] != asked:
            adj.append(Adjustment(field=f"budgets.{key}", requested=asked,
                                  granted=budgets[key], reason="a lower limit applies"))
    memory = spec.get("memory") or {}
    memory_mode = narrowest(MEMORY_MODES, memory.get("mode", "read_only"), policy.memory_mode)
    scopes = intersect(tuple(memory.get("scopes") or ()), policy.memory_scopes)
    lifecycle = spec.get("lifecycle") or {}
    writeback = narrowest(WRITEBACK_MODES, lifecycle.get("writeback", "propose"),
                          policy.writeback)
    if writeback != lifecycle.get("writeback", "propose"):
        adj.append(Adjustment(field="/spec/lifecycle/writeback",
                              requested=lifecycle.get("writeback", "propose"),
                              granted=writeback, reason="rein's policy caps writeback"))
    sub = runtime.get("subagents") or {}
    subagents = tuple(sub.get("allow") or ())
    if policy.subagents is not None:
        subagents = tuple(s for s in subagents if s in policy.subagents)
    model = resolve_model(spec.get("model") or {}, policy, can_serve)
    if model.rule != "exact" and (spec.get("model") or {}).get("id"):
        adj.append(Adjustment(field="/spec/model", requested=model.requested,
                              granted=model.to_json(), reason=model.reason))
    return EffectiveProfile(
        resolved=resolved, tools=tools, permissions=permissions,
        rules=tuple(perms_spec.get("rules") or ()), read_roots=read_roots,
        write_roots=write_roots, deny_paths=deny_paths,
        network=permissions["network"], allow_hosts=allow_hosts, model=model, budgets=budgets,
        memory_mode=memory_mode, memory_scopes=scopes, writeback=writeback,
        subagents=subagents,
        subagent_max_depth=min(sub.get("max_depth", 8), policy.subagent_max_depth),
        subagent_max_concurrent=min(sub.get("max_concurrent", 64),
                                    policy.subagent_max_concurrent),
        depth=policy.depth, adjustments=tuple(adj))


def _tools(resolved: ResolvedProfile, policy: Policy, node: NodeRequirements,
           adj: list[Adjustment]) -> ToolGrant:
    spec_tools = resolved.spec.get("tools") or {}
    mode = spec_tools.get("policy", "allowlist")
    asked: tuple[str, ...] = tuple(spec_tools.get("allow") or ()) if mode == "allowlist" \
        else ("**",)
    deny = tuple(spec_tools.get("deny") or ()) if mode != "inherit" else ()
    deny = tuple(dict.fromkeys([*deny, *policy.deny_tools,
                                *(f"mcp/{s}/**" for s in resolved.dropped_mcp_servers)]))
    sets = [asked, policy.tools] + ([node.tools] if node.tools is not None else [])
    granted = asked
    for other in sets[1:]:
        granted = intersect(granted, other)
    granted = tuple(g for g in granted if not match_any(deny, g))
    missing = [t for t in asked if t != "**" and t not in granted]
    if missing:
        adj.append(Adjustment(field="/spec/tools/allow", requested=list(asked),
                              granted=list(granted),
                              reason=f"not granted by rein's policy or the node: {missing}"))
    filters = {s["name"]: (tuple((s.get("tools") or {}).get("allow") or ()) or None,
                           tuple((s.get("tools") or {}).get("deny") or ()))
               for s in resolved.mcp_servers}
    return ToolGrant(allow_sets=tuple(sets), deny=deny, granted=granted, mcp_filters=filters)


def _roots(key: str, fs: Mapping[str, Any], ceiling: tuple[str, ...],
           adj: list[Adjustment]) -> tuple[str, ...]:
    if key not in fs:
        return ceiling  # the profile does not narrow: the harness default applies
    asked = tuple(fs[key])
    granted = intersect(asked, ceiling, paths=True)
    if set(granted) != set(asked):
        adj.append(Adjustment(field=f"/spec/permissions/filesystem/{key}", requested=list(asked),
                              granted=list(granted), reason="outside rein's policy roots"))
    return granted


def delegate(parent: EffectiveProfile, child: ResolvedProfile, *, active: int = 0,
             node_requirements: NodeRequirements | None = None) -> EffectiveProfile:
    """The effective profile of a subagent: intersected with the parent's effective profile,
    never the harness default (T7). Refused when the parent may not delegate to it, or the
    depth or concurrency limit would be passed (L3-B2)."""
    if child.name not in parent.subagents:
        raise Refused(f"{parent.name!r} may not delegate to {child.name!r}",
                      code="OAP230", hint="list it in spec.runtime.subagents.allow")
    if parent.depth + 1 > parent.subagent_max_depth:
        raise Refused(f"delegation depth {parent.depth + 1} exceeds max_depth "
                      f"{parent.subagent_max_depth}", code="OAP231")
    if active >= parent.subagent_max_concurrent:
        raise Refused(f"{active} subagents already running; max_concurrent is "
                      f"{parent.subagent_max_concurrent}", code="OAP232")
    return effective_profile(child, parent.as_policy(), node_requirements)
