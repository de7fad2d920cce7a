"""Transient provider errors are retried with exponential backoff; everything else is not.

The SDKs' own retries are switched off (``max_retries=0``) so this is the only layer that
retries, and its sleep is injectable: tests pass a recorder instead of waiting.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from rein.core.frozen import Frozen
from rein.providers.errors import is_transient

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


class RetryPolicy(Frozen):
    """How often and how patiently to retry a transient failure."""

    max_attempts: int = 3  # total, including the first
    initial_delay: float = 1.0
    max_delay: float = 20.0
    multiplier: float = 2.0
    jitter: bool = True

    def delay(self, retry: int, rng: random.Random | None = None) -> float:
        """The wait before retry number ``retry`` (1-based); full jitter when enabled."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (retry - 1))
        if not self.jitter:
            return base
        return (rng or random).uniform(base / 2, base)


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    sleep: Sleep = asyncio.sleep,
    rng: random.Random | None = None,
    on_retry: Callable[[int, BaseException, float], None] | None = None,
) -> T:
    """Run ``call``; on a transient error wait and try again, up to ``policy.max_attempts``."""
    attempt = 1
    while True:
        try:
            return await call()
        except Exception as exc:
            if not is_transient(exc) or attempt >= policy.max_attempts:
                raise
            wait = policy.delay(attempt, rng)
            if on_retry is not None:
                on_retry(attempt, exc, wait)
            await sleep(wait)
            attempt += 1
