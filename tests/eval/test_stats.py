"""The statistics, against independent computations: Wilson intervals against published
values, the paired test against brute-force enumeration of every sign pattern and against
McNemar's exact binomial test."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from rein.eval.stats import (
    Pair,
    change,
    ks,
    paired_test,
    pass_at_k,
    pass_hat_k,
    state,
    wilson,
)


@pytest.mark.parametrize(("solved", "trials", "low", "high"), [
    (0, 10, 0.0, 0.2775),     # upper bound z²/(n+z²)
    (5, 10, 0.2366, 0.7634),
    (10, 10, 0.7225, 1.0),
    (1, 20, 0.0089, 0.2361),
    (8, 8, 0.6756, 1.0),
])
def test_wilson_matches_published_values(solved: int, trials: int, low: float,
                                         high: float) -> None:
    got = wilson(solved, trials)
    assert got == pytest.approx((low, high), abs=5e-4)


def test_wilson_without_trials_says_nothing_is_known() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(3, 2)


def _brute_force(pairs: list[Pair]) -> float:
    diffs = [p.difference for p in pairs if p.difference != 0]
    observed = abs(sum(diffs, Fraction(0)))
    hits = sum(1 for signs in itertools.product((1, -1), repeat=len(diffs))
               if abs(sum((s * d for s, d in zip(signs, diffs, strict=True)),
                          Fraction(0))) >= observed)
    return hits / 2 ** len(diffs) if diffs else 1.0


def test_the_paired_test_is_exact_enumeration() -> None:
    rng = random.Random(31)
    for _ in range(60):
        pairs = []
        for i in range(rng.randint(1, 9)):
            n_a, n_b = rng.randint(1, 4), rng.randint(1, 4)
            pairs.append(Pair(scenario=f"s{i}", solved_a=rng.randint(0, n_a), trials_a=n_a,
                              solved_b=rng.randint(0, n_b), trials_b=n_b))
        assert paired_test(pairs).p_value == pytest.approx(_brute_force(pairs), abs=1e-12)


@pytest.mark.parametrize(("b", "c"), [(6, 0), (5, 1), (7, 2), (3, 3), (0, 4), (10, 1)])
def test_one_trial_each_is_mcnemars_exact_test(b: int, c: int) -> None:
    """b scenarios only B solves, c only A solves, the rest tied."""
    pairs = ([Pair(scenario=f"b{i}", solved_a=0, trials_a=1, solved_b=1, trials_b=1)
              for i in range(b)]
             + [Pair(scenario=f"c{i}", solved_a=1, trials_a=1, solved_b=0, trials_b=1)
                for i in range(c)]
             + [Pair(scenario="tie", solved_a=1, trials_a=1, solved_b=1, trials_b=1)])
    n = b + c
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    assert paired_test(pairs).p_value == pytest.approx(min(1.0, 2 * tail))
    assert paired_test(pairs).discordant == n


def test_six_scenarios_broken_the_same_way_are_significant_and_none_are_not() -> None:
    broken = [Pair(scenario=f"s{i}", solved_a=3, trials_a=3, solved_b=0, trials_b=3)
              for i in range(6)]
    result = paired_test(broken)
    assert result.p_value == 2 / 64
    assert result.difference == -1.0
    same = [Pair(scenario=f"s{i}", solved_a=2, trials_a=3, solved_b=2, trials_b=3)
            for i in range(6)]
    assert paired_test(same).p_value == 1.0


@pytest.mark.parametrize(("a", "b", "expected"), [
    ((0, 3), (3, 3), "fixed"), ((2, 3), (3, 3), "fixed"),
    ((3, 3), (0, 3), "broken"), ((3, 3), (2, 3), "broken"),
    ((0, 3), (1, 3), "flaky"), ((1, 3), (0, 3), "flaky"), ((1, 3), (2, 3), "flaky"),
    ((3, 3), (3, 3), "unchanged"), ((0, 3), (0, 3), "unchanged"),
    ((0, 0), (3, 3), "unchanged"),
])
def test_what_a_change_did_to_a_scenario(a: tuple[int, int], b: tuple[int, int],
                                         expected: str) -> None:
    pair = Pair(scenario="s", solved_a=a[0], trials_a=a[1], solved_b=b[0], trials_b=b[1])
    assert change(pair) == expected


def test_states() -> None:
    assert [state(0, 0), state(0, 2), state(1, 2), state(2, 2)] == [
        "none", "failed", "flaky", "solved"]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
def test_pass_at_k_and_pass_hat_k_are_the_shares_of_all_draws(n: int) -> None:
    """Over every way of drawing k of the n trials: the share of draws with some solved
    trial (pass@k) and with only solved ones (pass^k)."""
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            draws = list(itertools.combinations(outcomes, k))
            assert pass_at_k(n, c, k) == Fraction(sum(any(d) for d in draws), len(draws))
            assert pass_hat_k(n, c, k) == Fraction(sum(all(d) for d in draws), len(draws))
        assert pass_at_k(n, c, 1) == pass_hat_k(n, c, 1) == Fraction(c, n)


def test_pass_at_k_refuses_what_it_cannot_estimate() -> None:
    for n, c, k in [(3, 4, 1), (3, 1, 4), (3, 1, 0)]:
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)


def test_the_ks_reported() -> None:
    assert ks(0) == [] and ks(1) == [1] and ks(4) == [1, 2, 3, 4]
    assert ks(30) == [1, 2, 5, 10, 20, 30] and ks(100) == [1, 2, 5, 10, 20, 50, 100]
