"""The driving agents' price table: versioned with the date it was taken, overridable from
rein.toml (which the version then names), every kind of token priced apart."""

from __future__ import annotations

import pytest

from rein.errors import ConfigError
from rein.providers.pricing import AGENT_PRICES_TAKEN, agent_prices


def test_the_table_names_the_date_it_was_taken() -> None:
    table = agent_prices()
    assert table.version == f"rein {AGENT_PRICES_TAKEN}"
    assert all(p.input > 0 and p.output >= p.input for p in table.prices.values())


def test_a_person_overrides_a_price_and_the_version_says_so() -> None:
    mine = {"claude-opus-4-8": {"input": 1.0, "output": 2.0, "cache_read": 0.5,
                                "cache_write": 4.0},
            "in-house-model": {"input": 3.0, "output": 6.0}}
    table = agent_prices(mine)
    assert table.version == f"rein {AGENT_PRICES_TAKEN} + rein.toml (claude-opus-4-8, " \
                            "in-house-model)"
    price = table.price("claude-opus-4-8")
    assert price is not None
    # 1M tokens in: 200k read from the cache, 100k written to it, the rest plain; 1M out.
    cost = price.cost_of(input_tokens=1_000_000, output_tokens=1_000_000,
                         cached_input_tokens=200_000, cache_write_tokens=100_000)
    assert cost == pytest.approx(0.7 * 1.0 + 0.2 * 0.5 + 0.1 * 4.0 + 2.0)
    assert table.price("in-house-model") is not None
    assert agent_prices().price("in-house-model") is None  # the package's table unchanged


def test_a_malformed_price_is_a_coded_error() -> None:
    with pytest.raises(ConfigError) as caught:
        agent_prices({"m": {"input": -1, "output": 1}})
    assert caught.value.code == "PRICE001" and caught.value.hint
