"""Budgets (AGS §5.4, §13): a dataclass of optional limits, checked before anything is spent
and again after every attempt.

Graph limits are global for the run, child runs included (a child's usage counts against its
parent). Node limits are summed across a node's attempts. The effective limit an attempt
gets is the minimum of the node's remaining limit and the run's remaining limit. A limit
that would be passed raises :class:`BudgetExceeded` naming the limit and the value.

A worker reports what it spent only when it is done, so an attempt can pass a limit it was
given (a driver, a command, a provider that overshoots). The check after the attempt is
what catches that: over a node limit the attempt fails ``budget_exceeded`` (and goes to the
ladder); over a graph limit the run stops (RT061), even when nothing was left to schedule.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen, Record, field
from rein.core.usage import Budget, Usage
from rein.errors import BudgetExceeded


class Limits(Frozen):
    """Optional limits; ``None`` means unlimited."""

    max_total_tokens: int | None = None
    max_cost_usd: float | None = None
    max_wall_clock_seconds: float | None = None
    max_node_executions: int | None = None
    deadline: dt.datetime | None = None

    @classmethod
    def from_constraints(cls, constraints: Mapping[str, Any] | None) -> Limits:
        c = constraints or {}
        deadline = c.get("deadline")
        when = None
        if isinstance(deadline, str):
            try:
                when = dt.datetime.fromisoformat(deadline)
            except ValueError:
                when = None
        return cls(
            max_total_tokens=c.get("max_total_tokens"),
            max_cost_usd=c.get("max_cost_usd"),
            max_wall_clock_seconds=c.get("max_wall_clock_seconds"),
            max_node_executions=c.get("max_node_executions"),
            deadline=when,
        )


class Spent(Record):
    """What a run (or a node) has used so far. Mutable, owned by one run."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    tool_calls: int = 0
    node_executions: int = 0
    unmeasured: bool = False  # a worker could not report tokens or cost

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, usage: Usage) -> None:
        if usage.input_tokens is None or usage.output_tokens is None or usage.cost_usd is None:
            self.unmeasured = True
        self.input_tokens += usage.input_tokens or 0
        self.output_tokens += usage.output_tokens or 0
        self.cost_usd += usage.cost_usd or 0.0
        self.tool_calls += usage.tool_calls

    def to_record(self, wall_clock_seconds: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "tool_calls": self.tool_calls,
            "node_executions": self.node_executions,
        }
        if wall_clock_seconds is not None:
            out["wall_clock_seconds"] = round(max(0.0, wall_clock_seconds), 6)
        return out


class BudgetTracker(Record):
    """The run's global limits and spending; a child run shares its parent's tracker."""

    limits: Limits
    started_at: dt.datetime
    spent: Spent = field(default_factory=Spent)

    def check_global(self, now: dt.datetime) -> None:
        """Raise when a global limit is already reached (RT061): stop scheduling."""
        lim, s = self.limits, self.spent
        if lim.max_total_tokens is not None and s.total_tokens >= lim.max_total_tokens:
            raise _exceeded("max_total_tokens", lim.max_total_tokens, s.total_tokens)
        if lim.max_cost_usd is not None and s.cost_usd >= lim.max_cost_usd:
            raise _exceeded("max_cost_usd", lim.max_cost_usd, round(s.cost_usd, 6))
        elapsed = (now - self.started_at).total_seconds()
        if lim.max_wall_clock_seconds is not None and elapsed >= lim.max_wall_clock_seconds:
            raise _exceeded("max_wall_clock_seconds", lim.max_wall_clock_seconds, elapsed)
        if lim.deadline is not None and now >= lim.deadline:
            raise _exceeded("deadline", lim.deadline.isoformat(), now.isoformat())

    def overrun(self, now: dt.datetime) -> BudgetExceeded | None:
        """A global limit already passed (not merely reached) by what was spent: the work
        that just finished went over it (RT061)."""
        lim, s = self.limits, self.spent
        if lim.max_total_tokens is not None and s.total_tokens > lim.max_total_tokens:
            return _exceeded("max_total_tokens", lim.max_total_tokens, s.total_tokens,
                             verb="passed")
        if lim.max_cost_usd is not None and s.cost_usd > lim.max_cost_usd:
            return _exceeded("max_cost_usd", lim.max_cost_usd, round(s.cost_usd, 6),
                             verb="passed")
        elapsed = (now - self.started_at).total_seconds()
        if lim.max_wall_clock_seconds is not None and elapsed > lim.max_wall_clock_seconds:
            return _exceeded("max_wall_clock_seconds", lim.max_wall_clock_seconds, elapsed,
                             verb="passed")
        if lim.deadline is not None and now > lim.deadline:
            return _exceeded("deadline", lim.deadline.isoformat(), now.isoformat(),
                             verb="passed")
        return None

    def start_execution(self, now: dt.datetime) -> None:
        """Count one node execution, refusing the one that would pass the ceiling."""
        self.check_global(now)
        ceiling = self.limits.max_node_executions
        if ceiling is not None and self.spent.node_executions + 1 > ceiling:
            raise _exceeded("max_node_executions", ceiling, self.spent.node_executions + 1)
        self.spent.node_executions += 1

    def attempt_budget(
        self, node_constraints: Mapping[str, Any], node_spent: Spent, now: dt.datetime
    ) -> Budget:
        """The limits one attempt may use: min(node remaining, run remaining)."""
        c = node_constraints
        lim, s = self.limits, self.spent

        def least(*values: float | None) -> Any:
            known = [v for v in values if v is not None]
            return min(known) if known else None

        def left(limit: Any, used: float) -> Any:
            return None if limit is None else max(0, limit - used)

        elapsed = (now - self.started_at).total_seconds()
        return Budget(
            max_input_tokens=left(c.get("max_input_tokens"), node_spent.input_tokens),
            max_output_tokens=left(c.get("max_output_tokens"), node_spent.output_tokens),
            max_total_tokens=least(
                left(c.get("max_total_tokens"), node_spent.total_tokens),
                left(lim.max_total_tokens, s.total_tokens),
            ),
            max_cost_usd=least(
                left(c.get("max_cost_usd"), node_spent.cost_usd),
                left(lim.max_cost_usd, s.cost_usd),
            ),
            max_wall_clock_seconds=least(
                c.get("max_wall_clock_seconds"), left(lim.max_wall_clock_seconds, elapsed)
            ),
            max_tool_calls=c.get("max_tool_calls"),
            max_agent_steps=c.get("max_agent_steps"),
        )


def _node_totals(node_spent: Spent) -> tuple[tuple[str, float], ...]:
    """A node's spending under the names of the limits that bound it (summed over attempts)."""
    return (("max_input_tokens", node_spent.input_tokens),
            ("max_output_tokens", node_spent.output_tokens),
            ("max_total_tokens", node_spent.total_tokens),
            ("max_cost_usd", round(node_spent.cost_usd, 6)))


def node_budget_left(node_constraints: Mapping[str, Any], node_spent: Spent) -> str | None:
    """The node limit already used up (summed across attempts), or ``None``: checked before
    an attempt starts."""
    for limit, used in _node_totals(node_spent):
        value = node_constraints.get(limit)
        if value is not None and used >= value:
            return f"{limit} {value} reached ({used})"
    return None


def node_overrun(node_constraints: Mapping[str, Any], node_spent: Spent,
                 usage: Usage) -> str | None:
    """The node limit that the attempt which spent ``usage`` went past, or ``None``: checked
    after the attempt. ``max_tool_calls`` bounds one attempt; the rest the node's total."""
    c = node_constraints
    for limit, used in _node_totals(node_spent):
        value = c.get(limit)
        if value is not None and used > value:
            return f"{limit} {value} passed ({used})"
    if c.get("max_tool_calls") is not None and usage.tool_calls > c["max_tool_calls"]:
        return f"max_tool_calls {c['max_tool_calls']} passed ({usage.tool_calls})"
    return None


def _exceeded(limit: str, value: Any, reached: Any, *, verb: str = "reached") -> BudgetExceeded:
    return BudgetExceeded(
        f"global limit {limit} = {value} {verb} ({reached})",
        hint=f"raise constraints.{limit} in the graph, or resume after reviewing the spend",
        limit=limit,
        value=value,
        reached=reached,
    )
