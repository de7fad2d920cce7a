"""Cost accounting: a price table per model, in US dollars per million tokens.

Two tables, one shape. A **provider's** table is configuration, never built in, because a
provider rein calls may be local or negotiated:

.. code-block:: toml

    [providers.openai.prices."gpt-4.1-mini"]
    input = 0.40          # USD per million input tokens
    output = 1.60         # USD per million output tokens
    cached_input = 0.10   # optional; defaults to the input price

The **driving agents'** table prices what an external agent (Claude Code, the Codex CLI)
spent, read from its own records or reported in its envelopes. It ships in the package
(:data:`AGENT_PRICES`, taken on :data:`AGENT_PRICES_TAKEN` from the vendors' published
prices, standard tier: no batch, priority or long-context rates) and a user overrides or
adds models under ``[usage.prices."MODEL"]`` in rein.toml, with the same keys plus
``cache_write`` (and ``cache_read``, another name for ``cached_input``). A model is found by
its id, or by the longest entry its id starts with followed by ``-`` (a dated snapshot such
as ``claude-haiku-4-5-20251001``).

A model with no entry has an unknown cost (``None``): budgets then say they are unenforced
instead of pretending the call was free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rein.core.frozen import Frozen, field
from rein.errors import ConfigError

if TYPE_CHECKING:
    from rein.providers.types import TokenUsage

_MILLION = 1_000_000


class Price(Frozen):
    """USD per million tokens: input not served from a cache, output, input read from a
    prompt cache (``cached_input``; the input price when not set) and input written to one
    (``cache_write``; the input price when not set: OpenAI charges no write)."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(self, usage: TokenUsage) -> float:
        return self.cost_of(input_tokens=usage.input_tokens,
                            cached_input_tokens=usage.cached_input_tokens,
                            output_tokens=usage.output_tokens)

    def cost_of(self, *, input_tokens: int, output_tokens: int,
                cached_input_tokens: int = 0, cache_write_tokens: int = 0) -> float:
        """The cost of one or more calls. ``input_tokens`` counts every input token, those
        read from and written to a cache included."""
        cached = max(0, min(cached_input_tokens, input_tokens))
        written = max(0, min(cache_write_tokens, input_tokens - cached))
        plain = input_tokens - cached - written
        read_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write is None else self.cache_write
        total = (plain * self.input + cached * read_rate + written * write_rate
                 + output_tokens * self.output)
        return total / _MILLION

    def to_json(self) -> dict[str, float]:
        return {"input": self.input, "output": self.output,
                "cache_read": self.input if self.cached_input is None else self.cached_input,
                "cache_write": self.input if self.cache_write is None else self.cache_write}


class PriceTable(Frozen):
    """Prices by model id; ``version`` says where they come from."""

    prices: Mapping[str, Price] = field(default_factory=dict)
    version: str = "configured"

    def price(self, model: str | None) -> Price | None:
        """The price of ``model``: its own entry, else the longest entry it starts with
        followed by ``-`` (a dated snapshot of that model); ``None`` when there is none."""
        if not model:
            return None
        if model in self.prices:
            return self.prices[model]
        stems = [m for m in self.prices if model.startswith(m + "-")]
        return self.prices[max(stems, key=len)] if stems else None

    def cost(self, model: str, usage: TokenUsage) -> float | None:
        """The cost of ``usage`` on ``model``, or None when the model has no price or the
        vendor reported no tokens."""
        price = self.price(model)
        return None if price is None or not usage.reported else price.cost(usage)

    def over(self, other: Mapping[str, Price], version: str) -> PriceTable:
        """This table with ``other``'s entries added or replacing its own."""
        return PriceTable(prices={**self.prices, **other}, version=version)

    @classmethod
    def parse(cls, data: Mapping[str, Any] | None, *, where: str = "prices") -> PriceTable:
        """From a ``prices`` table of rein.toml (ConfigError PRICE001)."""
        prices: dict[str, Price] = {}
        for model, entry in (data or {}).items():
            if not isinstance(entry, Mapping):
                raise _bad(f"{where}.{model} must be a table with input and output", where)
            unknown = set(entry) - _KEYS
            if unknown:
                raise _bad(f"{where}.{model}: unknown keys {sorted(unknown)}", where)
            if "cached_input" in entry and "cache_read" in entry:
                raise _bad(f"{where}.{model}: cached_input and cache_read are the same "
                           "price; give one", where)
            values: dict[str, float | None] = {}
            for key in sorted(_KEYS):
                value = entry.get(key)
                if value is None and key not in ("input", "output"):
                    values[key] = None
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise _bad(
                        f"{where}.{model}.{key} must be a number >= 0 (USD per million tokens)",
                        where,
                    )
                values[key] = float(value)
            read = values["cached_input"] if values["cached_input"] is not None else \
                values["cache_read"]
            prices[str(model)] = Price(input=values["input"] or 0.0,
                                       output=values["output"] or 0.0,
                                       cached_input=read, cache_write=values["cache_write"])
        return cls(prices=prices)


_KEYS = frozenset({"input", "output", "cached_input", "cache_read", "cache_write"})


def _bad(message: str, where: str) -> ConfigError:
    return ConfigError(
        message,
        code="PRICE001",
        hint=f'write {where}."MODEL" = {{ input = 0.4, output = 1.6 }} in USD per million tokens',
    )


# The driving agents' prices, USD per million tokens, standard tier, on the date below:
# Anthropic's as Claude Code 2.1.197 prices its own calls (the table inside its binary; 5-minute
# cache writes), OpenAI's as its published per-token prices for the models the Codex CLI runs.
# A model neither names is left out (its cost is unknown) rather than guessed. Update them
# with the date, and say what changed: reports name the version they priced with.
AGENT_PRICES_TAKEN = "2026-12-07"


def _p(input: float, output: float, cache_read: float, cache_write: float | None = None
       ) -> Price:
    return Price(input=input, output=output, cached_input=cache_read, cache_write=cache_write)


_AGENT_PRICES: dict[str, Price] = {
    # Anthropic: 5-minute cache writes (the default TTL).
    "claude-mythos-5": _p(10.0, 50.0, 1.0, 12.5),
    "claude-fable-5": _p(10.0, 50.0, 1.0, 12.5),
    "claude-opus-4-8": _p(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-7": _p(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-6": _p(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-5": _p(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-1": _p(15.0, 75.0, 1.5, 18.75),
    "claude-opus-4": _p(15.0, 75.0, 1.5, 18.75),
    "claude-sonnet-5": _p(3.0, 15.0, 0.3, 3.75),
    "claude-sonnet-4-6": _p(3.0, 15.0, 0.3, 3.75),
    "claude-sonnet-4-5": _p(3.0, 15.0, 0.3, 3.75),
    "claude-sonnet-4": _p(3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4-5": _p(1.0, 5.0, 0.1, 1.25),
    # OpenAI: no charge for writing the prompt cache (up to GPT-5.5).
    "gpt-5.5": _p(5.0, 30.0, 0.5),
    "gpt-5.4": _p(2.5, 15.0, 0.25),
    "gpt-5.4-mini": _p(0.75, 4.5, 0.075),
    "gpt-5.3-codex": _p(1.75, 14.0, 0.175),
    "gpt-5-codex": _p(1.25, 10.0, 0.125),
    "gpt-5-mini": _p(0.25, 2.0, 0.025),
}

AGENT_PRICES = PriceTable(prices=_AGENT_PRICES, version=f"rein {AGENT_PRICES_TAKEN}")


def agent_prices(overrides: Mapping[str, Any] | None = None) -> PriceTable:
    """The driving agents' prices: the package's table with ``[usage.prices]`` of rein.toml
    over it (PRICE001 for a malformed entry)."""
    if not overrides:
        return AGENT_PRICES
    mine = PriceTable.parse(overrides, where="usage.prices")
    names = ", ".join(sorted(mine.prices))
    return AGENT_PRICES.over(mine.prices, f"{AGENT_PRICES.version} + rein.toml ({names})")


__all__ = ["AGENT_PRICES", "AGENT_PRICES_TAKEN", "Price", "PriceTable", "agent_prices"]
