"""What an attempt spent, and the limits left for it."""

from __future__ import annotations

from typing import Any

from rein.core.frozen import Frozen, set_field


class Usage(Frozen):
    """What an attempt spent. ``None`` means the worker could not measure it."""

    __slots__ = ("agent_steps", "cost_usd", "input_tokens", "output_tokens", "tool_calls")
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    tool_calls: int
    agent_steps: int

    def __init__(self, *, input_tokens: int | None = 0, output_tokens: int | None = 0,
                 cost_usd: float | None = 0.0, tool_calls: int = 0,
                 agent_steps: int = 0) -> None:
        set_field(self, "input_tokens", input_tokens)
        set_field(self, "output_tokens", output_tokens)
        set_field(self, "cost_usd", cost_usd)
        set_field(self, "tool_calls", tool_calls)
        set_field(self, "agent_steps", agent_steps)

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

    __slots__ = ("max_agent_steps", "max_cost_usd", "max_input_tokens", "max_output_tokens",
                 "max_tool_calls", "max_total_tokens", "max_wall_clock_seconds")
    max_input_tokens: int | None
    max_output_tokens: int | None
    max_total_tokens: int | None
    max_cost_usd: float | None
    max_wall_clock_seconds: float | None
    max_tool_calls: int | None
    max_agent_steps: int | None

    def __init__(self, *, max_input_tokens: int | None = None,
                 max_output_tokens: int | None = None, max_total_tokens: int | None = None,
                 max_cost_usd: float | None = None,
                 max_wall_clock_seconds: float | None = None,
                 max_tool_calls: int | None = None, max_agent_steps: int | None = None) -> None:
        set_field(self, "max_input_tokens", max_input_tokens)
        set_field(self, "max_output_tokens", max_output_tokens)
        set_field(self, "max_total_tokens", max_total_tokens)
        set_field(self, "max_cost_usd", max_cost_usd)
        set_field(self, "max_wall_clock_seconds", max_wall_clock_seconds)
        set_field(self, "max_tool_calls", max_tool_calls)
        set_field(self, "max_agent_steps", max_agent_steps)
