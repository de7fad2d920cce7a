"""rein's own policy (``[policy]`` in ``rein.toml``) and an AGS node's requirements, as values.

Both are ceilings the effective profile is intersected with. A parent's effective profile
becomes the :class:`Policy` its subagents are intersected with (T7), so delegation reuses the
same narrowing code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from rein.config import DECISIONS, DEFAULT_POLICY, Config
from rein.core.frozen import Frozen

Decision = Literal["deny", "ask", "allow"]
PERMISSION_KEYS = ("default", "shell", "edit", "network")
MEMORY_MODES = ("off", "read_only", "read_write")
WRITEBACK_MODES = ("off", "propose", "auto")
BUDGET_KEYS = ("max_turns", "max_tool_calls", "timeout_seconds", "max_cost_usd",
               "max_context_tokens", "max_state_tokens", "max_state_bytes")


def narrowest(order: tuple[str, ...], *values: str | None) -> str:
    """The narrowest of the given values in ``order`` (None = no opinion)."""
    present = [v for v in values if v is not None]
    return min(present, key=order.index) if present else order[-1]


def decision_min(*values: str | None) -> Decision:
    """``deny`` < ``ask`` < ``allow``: the minimum of the decisions given."""
    return narrowest(DECISIONS, *values)  # type: ignore[return-value]


def budget_min(*values: float | None) -> Any:
    """The smallest limit given; None means unlimited."""
    present = [v for v in values if v is not None]
    return min(present) if present else None


class Policy(Frozen):
    """What rein (or a delegating parent) is willing to grant."""

    permissions: Mapping[str, Decision]  # default, shell, edit, network
    tools: tuple[str, ...] = ("**",)
    deny_tools: tuple[str, ...] = ()
    read_roots: tuple[str, ...] = (".",)
    write_roots: tuple[str, ...] = (".",)
    deny_paths: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ("*",)
    models: tuple[str, ...] = ("**",)
    memory_mode: str = "read_write"
    memory_scopes: tuple[str, ...] = ("**",)
    writeback: str = "auto"
    budgets: Mapping[str, Any] = None  # type: ignore[assignment]
    subagent_max_depth: int = 8
    subagent_max_concurrent: int = 64
    subagents: tuple[str, ...] | None = None  # None: any profile; set by a delegating parent
    depth: int = 0  # delegation depth this policy applies at

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> Policy:
        """From ``[policy]`` data (defaults filled in for missing keys)."""
        p = {**DEFAULT_POLICY, **raw}
        return cls(
            permissions={k: p[k] for k in PERMISSION_KEYS},
            tools=tuple(p["tools"]), deny_tools=tuple(p["deny_tools"]),
            read_roots=tuple(p["read_roots"]), write_roots=tuple(p["write_roots"]),
            deny_paths=tuple(p["deny_paths"]), allow_hosts=tuple(p["allow_hosts"]),
            models=tuple(p["models"]), memory_mode=p["memory_mode"],
            memory_scopes=tuple(p["memory_scopes"]), writeback=p["writeback"],
            budgets={k: p[k] for k in BUDGET_KEYS},
            subagent_max_depth=p["subagent_max_depth"],
            subagent_max_concurrent=p["subagent_max_concurrent"],
        )

    @classmethod
    def from_config(cls, config: Config) -> Policy:
        """rein's policy from the merged ``rein.toml``."""
        return cls.from_mapping(config.policy)

    def budget(self, key: str) -> Any:
        return (self.budgets or {}).get(key)


# AGS permission scopes (``scope:action[:target]``) that grant each OAP permission key.
_NODE_SCOPES = {
    "shell": ("shell:", "process:"),
    "edit": ("fs:write", "fs:delete", "fs:create", "git:commit", "git:push"),
    "network": ("net:",),
}


class NodeRequirements(Frozen):
    """What an AGS node declares it needs. Everything here only narrows.

    ``None`` means the node says nothing (no narrowing); an empty tuple means "none".
    """

    tools: tuple[str, ...] | None = None
    permissions: tuple[str, ...] | None = None  # AGS strings, e.g. "fs:write:src/**"
    network: Literal["none", "restricted", "full"] | None = None
    workspace: Literal["none", "read_only", "read_write"] | None = None
    max_tool_calls: int | None = None
    max_cost_usd: float | None = None
    max_wall_clock_seconds: float | None = None
    max_agent_steps: int | None = None

    def decision(self, key: str) -> Decision | None:
        """The ceiling the node puts on an OAP permission key (None = no opinion)."""
        if key == "network" and self.network == "none":
            return "deny"
        if key == "edit" and self.workspace in ("none", "read_only"):
            return "deny"
        if self.permissions is None or key not in _NODE_SCOPES:
            return None
        granted = any(p.startswith(_NODE_SCOPES[key]) for p in self.permissions)
        return "allow" if granted else "deny"

    def budgets(self) -> dict[str, Any]:
        """The node's limits under the profile's budget names."""
        return {"max_tool_calls": self.max_tool_calls, "max_cost_usd": self.max_cost_usd,
                "timeout_seconds": self.max_wall_clock_seconds,
                "max_turns": self.max_agent_steps}
