"""What a model attempt has spent, and the limits checked before each model call.

Steps, tokens, cost and wall clock are checked before every call: a limit already reached
ends the attempt (``timeout`` for steps and wall clock, ``budget_exceeded`` for the rest)
before anything more is spent. Cost counts only while every call had a price: a model
missing from the price table makes ``max_cost_usd`` unenforceable, and the loop says so.
Tokens count only while every call reported them: a server that leaves ``usage`` out
leaves them unmeasured (``None``), never zero, and the loop says so too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rein.core.failures import FailureClass
from rein.core.frozen import Record, field
from rein.core.usage import Usage
from rein.workers.base import AttemptRequest

if TYPE_CHECKING:
    from rein.providers.types import ModelResponse


class Spend(Record):
    """What this attempt has used so far."""

    usage: Usage = field(default_factory=Usage)
    cost_known: bool = True
    started: float = 0.0


def limit_reached(
    request: AttemptRequest, spend: Spend, *, now: float, max_steps: int
) -> tuple[FailureClass, str] | None:
    """The failure to end the attempt with when a limit is reached, checked before each model
    call; ``max_steps`` is the worker's own step limit when the node sets none."""
    b = request.budget
    u = spend.usage
    steps = b.max_agent_steps or request.constraints.get("max_agent_steps") or max_steps
    if u.agent_steps >= steps:
        return FailureClass.TIMEOUT, f"max_agent_steps {steps} reached"
    checks = (
        ("max_input_tokens", b.max_input_tokens, u.input_tokens),
        ("max_output_tokens", b.max_output_tokens, u.output_tokens),
        ("max_total_tokens", b.max_total_tokens, u.total_tokens),
    )
    for name, limit, used in checks:
        if limit is not None and used is not None and used >= limit:
            return FailureClass.BUDGET_EXCEEDED, f"{name} {limit} reached ({used})"
    if b.max_cost_usd is not None and spend.cost_known and (u.cost_usd or 0) >= b.max_cost_usd:
        return (
            FailureClass.BUDGET_EXCEEDED,
            f"max_cost_usd {b.max_cost_usd} reached ({round(u.cost_usd or 0, 6)})",
        )
    elapsed = now - spend.started
    if b.max_wall_clock_seconds is not None and elapsed >= b.max_wall_clock_seconds:
        return (
            FailureClass.TIMEOUT,
            f"max_wall_clock_seconds {b.max_wall_clock_seconds} reached",
        )
    return None


def call_usage(response: ModelResponse) -> Usage:
    """One model call's usage: its tokens ``None`` (not measured) when the vendor reported
    none, never a zero it did not say."""
    known = response.usage.reported
    return Usage(input_tokens=response.usage.input_tokens if known else None,
                 output_tokens=response.usage.output_tokens if known else None,
                 cost_usd=response.cost_usd, agent_steps=1)


def usage_json(usage: Usage, model: str) -> dict[str, Any]:
    """A ``usage`` item's data: one model call's tokens and cost."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": usage.cost_usd,
        "model": model,
    }
