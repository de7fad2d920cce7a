"""The one check every tool call goes through: permissions, then sandbox, then ``ask`` rules.

The answer is a :class:`Decision`: ``allow``; ``deny`` with a message the model can act on (what
was refused, why, and what is allowed instead); or ``ask``, which the caller routes to the
approval queue. The order is fixed and only narrows:

1. a deny pattern or a missing grant → deny (the grants are the node's effective permissions,
   already the intersection of node, profile and harness policy);
2. a write the sandbox does not allow (read-only, outside the writable roots, a protected
   path: ``.git``, ``.rein``, ``rein.toml``, a file a hook runs) → deny; network use while the sandbox has no network → deny;
3. an ``ask`` pattern covering the request → ask;
4. otherwise → allow.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen, field
from rein.tools.permissions import Permission, PermissionSet
from rein.tools.sandbox import SandboxMode, SandboxPolicy


class Verdict(enum.StrEnum):
    """What happens to a tool call."""

    ALLOW = "allow"  # run it
    DENY = "deny"  # refuse it; the message goes back to the model
    ASK = "ask"  # a person decides; the caller pauses for approval


class Decision(Frozen):
    """The outcome of checking one tool call."""

    verdict: Verdict
    permission: str  # the concrete permission the call needs, e.g. "fs:write:src/a.py"
    message: str | None = None  # for deny and ask: what and why, and what is allowed
    allowed: tuple[str, ...] = ()  # the grants of the same scope:action, for the message

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict.value, "permission": self.permission}
        if self.message:
            out["message"] = self.message
        if self.allowed:
            out["allowed"] = list(self.allowed)
        return out


class ToolPolicy(Frozen):
    """Effective permissions, the sandbox policy, and which requests need a person's approval."""

    permissions: PermissionSet = field(default_factory=PermissionSet)
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    ask: tuple[Permission, ...] = ()

    @classmethod
    def build(
        cls,
        grants: Iterable[str],
        *,
        sandbox: SandboxPolicy,
        denied: Iterable[str] = (),
        ask: Iterable[str] = (),
    ) -> ToolPolicy:
        """From permission strings (PERM001 on a malformed one)."""
        return cls(
            permissions=PermissionSet.parse(grants, denied),
            sandbox=sandbox,
            ask=tuple(Permission.parse(a) for a in ask),
        )

    def check(
        self,
        request: Permission,
        *,
        writes: Path | None = None,
        uses_network: bool = False,
    ) -> Decision:
        """Decide on ``request``. ``writes`` is the resolved path a file tool would write."""
        text = str(request)
        if not self.permissions.allows(request):
            allowed = self.permissions.granted_for(request.scope, request.action)
            return Decision(
                verdict=Verdict.DENY,
                permission=text,
                message=_not_granted(request, allowed),
                allowed=allowed,
            )
        if writes is not None and not self.sandbox.can_write(writes):
            return Decision(
                verdict=Verdict.DENY,
                permission=text,
                message=self._sandbox_refusal(request, writes),
            )
        if (
            uses_network
            and not self.sandbox.network_access
            and self.sandbox.mode
            in (
                SandboxMode.READ_ONLY,
                SandboxMode.WORKSPACE_WRITE,
            )
        ):
            return Decision(
                verdict=Verdict.DENY,
                permission=text,
                message=f"refused {text}: the sandbox has no network access for this node; "
                "declare requirements.network (restricted or full) to use the network",
            )
        if any(a.covers(request) for a in self.ask):
            return Decision(
                verdict=Verdict.ASK,
                permission=text,
                message=f"{text} needs a person's approval before it runs",
            )
        return Decision(verdict=Verdict.ALLOW, permission=text)

    def _sandbox_refusal(self, request: Permission, path: Path) -> str:
        protecting = self.sandbox.protecting(path)
        if protecting is not None:
            why = {".git": "rein records and commits the work itself",
                   ".rein": "rein keeps its state there",
                   "rein.toml": "it is rein's configuration"}.get(
                protecting, "rein runs or trusts it: a configured hook's or command worker's "
                "file, or rein's own configuration")
            return (
                f"refused {request}: {protecting} is protected ({why}); no node writes it, "
                "whatever its fs:write grants"
            )
        if self.sandbox.mode is SandboxMode.READ_ONLY:
            return (
                f"refused {request}: the sandbox is read-only for this node; nothing may be written"
            )
        roots = ", ".join(str(r) for r in self.sandbox.writable()) or "(none)"
        return f"refused {request}: outside the writable roots ({roots})"


def _not_granted(request: Permission, allowed: tuple[str, ...]) -> str:
    scope_action = f"{request.scope}:{request.action}"
    if allowed:
        return (
            f"refused {request}: not covered by this node's permissions; "
            f"allowed for {scope_action}: {', '.join(allowed)}"
        )
    return f"refused {request}: this node has no {scope_action} permission at all"
