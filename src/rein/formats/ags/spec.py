"""Typed node specs: a node's failure, retry, success and requirements blocks with the AGS
defaults (App. A) applied once, here.

The plan (``rein graph plan``) and the engine read the same values from these frozen specs,
so a default (``retry.max_attempts`` 1, ``failure.on_exhausted`` fail, ...) is written in
one place and cannot drift between what a reviewer is shown and what runs. Specs are built
from a *validated* document: a value of the wrong shape falls back to its default instead
of raising, because the validator has already reported it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen, field

# AGS App. A defaults. Values a spec cannot type more narrowly stay plain strings: the
# validator has checked them against the schema's enums.
DEFAULT_RETRY_ON = ("transient", "tool_error", "criteria_failed")
DEFAULT_MAX_ATTEMPTS = 1
DEFAULT_ON_EXHAUSTED = "fail"


def _block(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class RetrySpec(Frozen):
    """``failure.retry``: how many attempts, after which failures, told what, how far apart."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS  # total, the first included
    retry_on: frozenset[str] = frozenset(DEFAULT_RETRY_ON)  # failure classes; "any" = all
    feedback: str = "failed_criteria"  # none | failure_summary | failed_criteria | ...
    backoff: str = "exponential"  # none | fixed | linear | exponential
    initial_delay_seconds: float = 2.0
    max_delay_seconds: float = 60.0
    jitter: bool = True
    escalate_intelligence: bool = False

    @classmethod
    def of(cls, block: Any) -> RetrySpec:
        b = _block(block)
        return cls(
            max_attempts=int(b.get("max_attempts", DEFAULT_MAX_ATTEMPTS)),
            retry_on=frozenset(str(c) for c in b.get("retry_on", DEFAULT_RETRY_ON)),
            feedback=str(b.get("feedback", "failed_criteria")),
            backoff=str(b.get("backoff", "exponential")),
            initial_delay_seconds=float(b.get("initial_delay_seconds", 2)),
            max_delay_seconds=float(b.get("max_delay_seconds", 60)),
            jitter=bool(b.get("jitter", True)),
            escalate_intelligence=bool(b.get("escalate_intelligence", False)),
        )

    def retries(self, failure: str | None, attempt: int) -> bool:
        """Whether attempt ``attempt``'s failure of class ``failure`` earns another."""
        return attempt < self.max_attempts and (
            "any" in self.retry_on or (failure or "") in self.retry_on)


class FailureSpec(Frozen):
    """``failure``: the ladder after the last attempt (AGS §14)."""

    retry: RetrySpec = field(default_factory=RetrySpec)
    fallback: tuple[Mapping[str, Any], ...] = ()  # ordered steps, each with a ``strategy``
    escalation: Mapping[str, Any] | None = None
    on_exhausted: str = DEFAULT_ON_EXHAUSTED  # fail | skip | escalate | succeed_degraded
    compensation: str | None = None  # node id of the undo

    @classmethod
    def of(cls, block: Any) -> FailureSpec:
        b = _block(block)
        escalation = b.get("escalation")
        compensation = b.get("compensation")
        return cls(
            retry=RetrySpec.of(b.get("retry")),
            fallback=tuple(s for s in b.get("fallback") or () if isinstance(s, Mapping)),
            escalation=escalation if isinstance(escalation, Mapping) else None,
            on_exhausted=str(b.get("on_exhausted", DEFAULT_ON_EXHAUSTED)),
            compensation=str(compensation) if compensation else None,
        )

    @property
    def strategies(self) -> tuple[str, ...]:
        return tuple(str(step.get("strategy")) for step in self.fallback)


class SuccessSpec(Frozen):
    """``success``: the criteria the harness checks and how many must pass."""

    mode: str = "all"  # all | any | n_of
    count: int = 1  # for n_of
    criteria: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def of(cls, block: Any) -> SuccessSpec:
        b = _block(block)
        return cls(mode=str(b.get("mode", "all")), count=int(b.get("count", 1)),
                   criteria=tuple(c for c in b.get("criteria") or () if isinstance(c, Mapping)))

    def described(self) -> Mapping[str, str]:
        """Criterion id → its description: what a failed attempt's feedback quotes."""
        return {str(c.get("id")): str(c.get("description", "")) for c in self.criteria}


class RequirementsSpec(Frozen):
    """``requirements``: what the node needs granted before it may start."""

    tools: tuple[Any, ...] = ()
    permissions: tuple[str, ...] = ()
    network: str = "none"  # none | restricted | full
    workspace: str = "read_only"  # read_only | read_write
    mcp_servers: tuple[str, ...] = ()

    @classmethod
    def of(cls, block: Any) -> RequirementsSpec:
        b = _block(block)
        return cls(tools=tuple(b.get("tools") or ()),
                   permissions=tuple(str(p) for p in b.get("permissions") or ()),
                   network=str(b.get("network", "none")),
                   workspace=str(b.get("workspace", "read_only")),
                   mcp_servers=tuple(str(s) for s in b.get("mcp_servers") or ()))


class NodeSpec(Frozen):
    """One node as the plan and the engine see it: ``defaults`` merged (§6.3), defaults of
    the typed blocks applied. ``raw`` is the merged mapping, for blocks not typed here."""

    id: str
    type: str = "task"
    title: str = ""
    failure: FailureSpec = field(default_factory=FailureSpec)
    success: SuccessSpec = field(default_factory=SuccessSpec)
    requirements: RequirementsSpec = field(default_factory=RequirementsSpec)
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def attempts(self) -> int:
        """How many attempts the node may make: a gate asks once, whatever it declares."""
        return 1 if self.type == "gate" else self.failure.retry.max_attempts


def node_spec(node_id: str, node: Mapping[str, Any]) -> NodeSpec:
    """The spec of ``node`` (already merged with the scope's ``defaults``)."""
    return NodeSpec(
        id=node_id, type=str(node.get("type", "task")), title=str(node.get("title", "")),
        failure=FailureSpec.of(node.get("failure")),
        success=SuccessSpec.of(node.get("success")),
        requirements=RequirementsSpec.of(node.get("requirements")),
        raw=node,
    )


__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_ON_EXHAUSTED",
    "DEFAULT_RETRY_ON",
    "FailureSpec",
    "NodeSpec",
    "RequirementsSpec",
    "RetrySpec",
    "SuccessSpec",
    "node_spec",
]
