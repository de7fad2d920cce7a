"""The clock and the id generator: injected so that runs are reproducible.

Production uses :class:`SystemClock` and :class:`RandomIds`; tests inject :class:`StepClock` and :class:`CounterIds` so that
the same graph with the same worker answers yields the same events and the same record.
"""

from __future__ import annotations

import datetime as dt
import os
import time

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if not TYPE_CHECKING:
    Protocol = object  # the protocols below are for the type checker
if TYPE_CHECKING:
    from typing import Protocol  # noqa: TC004 - object at run time, above


class Clock(Protocol):
    """Where time comes from."""

    def now(self) -> dt.datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (for durations and budgets)."""
        ...


class IdGenerator(Protocol):
    """Where new ids come from."""

    def new(self, prefix: str) -> str:
        """A fresh id starting with ``prefix`` (``run``, ``apv``, ...)."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class StepClock:
    """A test clock: every reading advances by ``step`` seconds from ``start``."""

    def __init__(self, *, start: dt.datetime = dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
                 step: float = 1.0) -> None:
        self.start, self.step = start, step
        self._ticks = 0

    def __repr__(self) -> str:
        return f"StepClock(start={self.start!r}, step={self.step!r})"

    def now(self) -> dt.datetime:
        self._ticks += 1
        return self.start + dt.timedelta(seconds=self._ticks * self.step)

    def monotonic(self) -> float:
        self._ticks += 1
        return self._ticks * self.step


class RandomIds:
    """Sortable-enough ids: a UTC timestamp and random hex, e.g. ``run-20260101T120000-3f9a1c``."""

    def new(self, prefix: str) -> str:
        # os.urandom, as secrets.token_hex reads it: `secrets` brings hmac, random and
        # OpenSSL's hashes, which a driver turn has no other use for
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
        return f"{prefix}-{stamp}-{os.urandom(3).hex()}"


class CounterIds:
    """A test id generator: ``run-1``, ``run-2``, ``apv-1``, ... per prefix."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def new(self, prefix: str) -> str:
        self._counts[prefix] = self._counts.get(prefix, 0) + 1
        return f"{prefix}-{self._counts[prefix]}"

