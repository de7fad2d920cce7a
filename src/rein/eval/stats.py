"""The statistics of an evaluation, in plain Python: no numeric library is needed.

* :func:`wilson` — the 95% Wilson score interval of a solve rate. Unlike the normal
  approximation it stays inside [0, 1] and is honest at 0 and at n (0 of 8 solved is not
  "0% ± 0").
* :func:`paired_test` — an exact test of the difference between two configurations on the
  same scenarios: a sign-flip permutation test over scenarios. Each scenario contributes
  the difference of its two solve rates; under the null hypothesis the configuration labels
  are exchangeable within a scenario, so every sign pattern of those differences is equally
  likely, and the p-value is the exact share of patterns whose total is at least as far from
  zero as the one observed. With one trial per scenario and configuration this *is*
  McNemar's exact (binomial) test on the discordant scenarios.
* :func:`pass_at_k` and :func:`pass_hat_k` — from ``n`` trials of a scenario of which
  ``c`` solved it, the chance that at least one (pass@k) or every one (pass^k) of ``k``
  trials drawn without replacement solves it: the unbiased estimators, exact in rationals.
  Averaged over scenarios, pass@k says how often a scenario is solved by some of ``k``
  tries, pass^k how reliably all of them solve it; pass@1 = pass^1 = the solve rate.
* :func:`compare` — per scenario, whether a change fixed it, broke it, left it flaky or
  left it unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from rein.core.frozen import Frozen

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal distribution

# Enumerating sign patterns is exact but grows with the spread of the differences; past
# this many distinct totals the distribution is still exact, only slower to build.
MAX_STATES = 2_000_000


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``trials``; (0, 1) for no trials."""
    if trials <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes out of {trials} trials")
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    # The exact ends: 0 successes has a lower bound of 0, all of them an upper bound of 1.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


class Pair(Frozen):
    """One scenario under two configurations: solved trials out of trials, each side."""

    scenario: str
    solved_a: int
    trials_a: int
    solved_b: int
    trials_b: int

    @property
    def difference(self) -> Fraction:
        """B's solve rate minus A's (0 when either side has no trial)."""
        if self.trials_a == 0 or self.trials_b == 0:
            return Fraction(0)
        return Fraction(self.solved_b, self.trials_b) - Fraction(self.solved_a, self.trials_a)


class PairedTest(Frozen):
    """The exact paired test of B against A."""

    p_value: float
    difference: float  # mean over scenarios of B's rate minus A's
    discordant: int  # scenarios whose rates differ (the only ones that carry information)
    method: str


METHOD = ("exact sign-flip permutation test over scenarios (McNemar's exact test when each "
          "scenario has one trial per configuration)")


def paired_test(pairs: Sequence[Pair]) -> PairedTest:
    """The two-sided exact p-value of the difference between B and A over ``pairs``."""
    diffs = [p.difference for p in pairs if p.trials_a and p.trials_b]
    mean = float(sum(diffs, Fraction(0)) / len(diffs)) if diffs else 0.0
    nonzero = [d for d in diffs if d != 0]
    if not nonzero:
        return PairedTest(p_value=1.0, difference=mean, discordant=0, method=METHOD)
    scale = math.lcm(*(d.denominator for d in nonzero))
    values = [abs(int(d * scale)) for d in nonzero]
    observed = abs(sum(int(d * scale) for d in nonzero))
    # The distribution of the total under random signs: counts of each reachable total.
    counts: dict[int, int] = {0: 1}
    for value in values:
        following: dict[int, int] = {}
        for total, ways in counts.items():
            for signed in (total + value, total - value):
                following[signed] = following.get(signed, 0) + ways
        counts = following
        if len(counts) > MAX_STATES:
            raise ValueError("too many scenarios with distinct differences for the exact test")
    extreme = sum(ways for total, ways in counts.items() if abs(total) >= observed)
    p_value = min(1.0, extreme / 2 ** len(values))
    return PairedTest(p_value=p_value, difference=mean, discordant=len(values), method=METHOD)


Change = Literal["fixed", "broken", "flaky", "unchanged"]
State = Literal["solved", "failed", "flaky", "none"]


def state(solved: int, trials: int) -> State:
    """``solved`` every trial, ``failed`` every trial, ``flaky`` (some of each), or ``none``
    (no trial was graded)."""
    if trials == 0:
        return "none"
    if solved == trials:
        return "solved"
    return "failed" if solved == 0 else "flaky"


def change(pair: Pair) -> Change:
    """What going from A to B did to one scenario.

    ``fixed``: solved in every trial under B and not under A; ``broken``: solved in every
    trial under A and not under B (a scenario that became flaky counts: it is newly broken
    sometimes); ``flaky``: neither, and either side flaky; ``unchanged``: the same state on
    both sides (both solved, or both failed, or one side not graded)."""
    a, b = state(pair.solved_a, pair.trials_a), state(pair.solved_b, pair.trials_b)
    if "none" in (a, b):
        return "unchanged"
    if b == "solved" and a != "solved":
        return "fixed"
    if a == "solved" and b != "solved":
        return "broken"
    if "flaky" in (a, b):
        return "flaky"
    return "unchanged"


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """1 - C(n-c, k) / C(n, k): the chance that some of ``k`` of the ``n`` trials solved."""
    _check(n, c, k)
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """C(c, k) / C(n, k): the chance that all of ``k`` of the ``n`` trials solved."""
    _check(n, c, k)
    return Fraction(math.comb(c, k), math.comb(n, k))


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")


def ks(n: int) -> list[int]:
    """The k reported for ``n`` trials per scenario: every k up to 10, then 1, 2, 5 and
    their decades, and n itself."""
    if n <= 10:
        return list(range(1, n + 1))
    out = {k for decade in (1, 10, 100, 1000) for k in (decade, 2 * decade, 5 * decade)
           if k <= n}
    return sorted(out | {n})


__all__ = ["METHOD", "Pair", "PairedTest", "change", "ks", "paired_test", "pass_at_k",
           "pass_hat_k", "state", "wilson"]
