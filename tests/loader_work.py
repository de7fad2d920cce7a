"""A named test double that measures what the document loader does, instead of how long it
takes: YAML events read, and values copied out of anchors by aliases. Timing a safety
property makes a test that fails on a busy machine; counting the work does not.

Use it as a context manager around a load::

    with LoaderWork() as work:
        load_text(bomb)
    assert work.values_copied <= limit
"""

from __future__ import annotations

from typing import Any, Self

import pytest

from rein.formats import loader_yaml


def count_values(value: Any) -> int:
    """How many JSON values ``value`` holds, itself included."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        total += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


class LoaderWork:
    """Counts the loader's YAML events and alias copies while it is active."""

    def __init__(self) -> None:
        self._patch = pytest.MonkeyPatch()
        self.events = 0
        self.values_copied = 0

    def __enter__(self) -> Self:
        work = self
        real_parser, real_clone = loader_yaml.EventParser, loader_yaml._clone

        class CountingParser(real_parser):  # type: ignore[misc, valid-type]
            def get_event(self) -> Any:
                work.events += 1
                return super().get_event()

        def counting_clone(value: Any) -> Any:
            copy = real_clone(value)
            work.values_copied += count_values(copy)
            return copy

        self._patch.setattr(loader_yaml, "EventParser", CountingParser)
        self._patch.setattr(loader_yaml, "_clone", counting_clone)
        return self

    def __exit__(self, *exc: object) -> None:
        self._patch.undo()
