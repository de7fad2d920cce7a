"""Cost accounting: a price table per model, in US dollars per million tokens.

Prices are configuration, never built in (they change, and local models cost nothing):

.. code-block:: toml

    [providers.openai.prices."gpt-4.1-mini"]
    input = 0.40          # USD per million input tokens
    output = 1.60         # USD per million output tokens
    cached_input = 0.10   # optional; defaults to the input price

A model with no entry has an unknown cost (``None``): the worker then reports the cost budget
as unenforced instead of pretending the call was free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen, field
from rein.errors import ConfigError
from rein.providers.types import TokenUsage

_MILLION = 1_000_000


class Price(Frozen):
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, usage: TokenUsage) -> float:
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        total = (
            (usage.input_tokens - cached) * self.input
            + cached * cached_rate
            + usage.output_tokens * self.output
        )
        return total / _MILLION


class PriceTable(Frozen):
    """Prices by model id."""

    prices: Mapping[str, Price] = field(default_factory=dict)

    def cost(self, model: str, usage: TokenUsage) -> float | None:
        """The cost of ``usage`` on ``model``, or None when the model has no price."""
        price = self.prices.get(model)
        return None if price is None else price.cost(usage)

    @classmethod
    def parse(cls, data: Mapping[str, Any] | None, *, where: str = "prices") -> PriceTable:
        """From the ``prices`` table of a provider in rein.toml (ConfigError PRICE001)."""
        prices: dict[str, Price] = {}
        for model, entry in (data or {}).items():
            if not isinstance(entry, Mapping):
                raise _bad(f"{where}.{model} must be a table with input and output", where)
            values: dict[str, float | None] = {}
            for key in ("input", "output", "cached_input"):
                value = entry.get(key)
                if value is None and key == "cached_input":
                    values[key] = None
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise _bad(
                        f"{where}.{model}.{key} must be a number >= 0 (USD per million tokens)",
                        where,
                    )
                values[key] = float(value)
            unknown = set(entry) - {"input", "output", "cached_input"}
            if unknown:
                raise _bad(f"{where}.{model}: unknown keys {sorted(unknown)}", where)
            prices[model] = Price(
                input=values["input"] or 0.0,
                output=values["output"] or 0.0,
                cached_input=values["cached_input"],
            )
        return cls(prices=prices)


def _bad(message: str, where: str) -> ConfigError:
    return ConfigError(
        message,
        code="PRICE001",
        hint=f'write {where}."MODEL" = {{ input = 0.4, output = 1.6 }} in USD per million tokens',
    )
