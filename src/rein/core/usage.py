"""What an attempt spent, and the limits left for it."""

from __future__ import annotations

from typing import Any

from rein.core.frozen import Frozen


class Usage(Frozen):
    """What an attempt spent. ``None`` means the worker could not measure it."""

    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cost_usd: float | None = 0.0
    tool_calls: int = 0
    agent_steps: int = 0

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        def add(a: Any, b: Any) -> Any:
            return None if a is None or b is None else a + b

        return Usage(
            input_tokens=add(self.input_tokens, other.input_tokens),
            output_tokens=add(self.output_tokens, other.output_tokens),
            cost_usd=add(self.cost_usd, other.cost_usd),
            tool_calls=self.tool_calls + other.tool_calls,
            agent_steps=self.agent_steps + other.agent_steps,
        )


class Budget(Frozen):
    """Limits left for one attempt; ``None`` = unlimited. Checked before spending."""

    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_total_tokens: int | None = None
    max_cost_usd: float | None = None
    max_wall_clock_seconds: float | None = None
    max_tool_calls: int | None = None
    max_agent_steps: int | None = None

