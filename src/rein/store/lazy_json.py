"""A stored JSON object parsed only as far as a lookup needs.

A driver turn stores the workspace snapshot its writes are measured from: one entry per
file, megabytes on a large tree. ``rein next`` reads every waiting turn but needs only the
snapshot's ``root`` (whose workspace it belongs to), and a submit reads the snapshots of
earlier turns only for their ``taken_ns``; parsing each whole snapshot would cost more than
everything else such a command does. :class:`LazyObject` reads the members of the object
one by one, in stored order, up to the key asked for, each value with the C decoder; the
members after it stay text until a lookup, an iteration or a comparison needs them (then
the rest is parsed at once). It is a read-only ``Mapping`` equal to the parsed object.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

    _Object = Mapping[str, Any]
else:
    _Object = Mapping

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


class LazyObject(_Object):
    """The JSON object in ``text``, parsed member by member on demand."""

    __slots__ = ("_pos", "_text", "_values")

    def __init__(self, text: str) -> None:
        self._text: str | None = text  # None once every member is parsed
        self._values: dict[str, Any] = {}
        self._pos = _skip(text, 0)
        if text[self._pos:self._pos + 1] != "{":  # not an object: parsed whole, as before
            value = json.loads(text)
            if not isinstance(value, dict):
                raise ValueError("a stored JSON object was expected")
            self._values, self._text = value, None
            return
        self._pos = _skip(text, self._pos + 1)
        if text[self._pos:self._pos + 1] == "}":
            self._text = None

    def _next_member(self) -> str | None:
        """Parse one more member; its key, or ``None`` when the object is complete."""
        text, pos = self._text, self._pos
        if text is None:
            return None
        if text[pos:pos + 1] != '"':
            raise ValueError(f"a stored JSON object is malformed at offset {pos}")
        key, pos = _DECODER.raw_decode(text, pos)  # a JSON string: the member's key
        assert isinstance(key, str)
        pos = _skip(text, pos)
        if text[pos:pos + 1] != ":":
            raise ValueError(f"a stored JSON object is malformed at offset {pos}")
        value, pos = _DECODER.raw_decode(text, _skip(text, pos + 1))
        self._values[key] = value
        pos = _skip(text, pos)
        if text[pos:pos + 1] == ",":
            self._pos = _skip(text, pos + 1)
        elif text[pos:pos + 1] == "}":
            self._text = None
        else:
            raise ValueError(f"a stored JSON object is malformed at offset {pos}")
        return key

    def _complete(self) -> dict[str, Any]:
        if self._text is not None:
            # The rest at once, with the C decoder.
            rest = _DECODER.decode("{" + self._text[self._pos:])
            self._values.update(rest)
            self._text = None
        return self._values

    def __getitem__(self, key: str) -> Any:
        # The first occurrence answers: rein's writers serialise dicts, so a stored object
        # never repeats a key.
        while key not in self._values and self._text is not None:
            self._next_member()
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._complete())

    def __len__(self) -> int:
        return len(self._complete())

    def __bool__(self) -> bool:  # `snapshot or {}` must not parse it all
        return bool(self._values) or self._text is not None  # text left: a member left

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyObject):
            other = other._complete()
        return self._complete() == other

    __hash__ = None  # type: ignore[assignment]  # a mapping: unhashable, as a dict is

    def __repr__(self) -> str:
        return repr(self._complete())

    def parsed(self) -> frozenset[str]:
        """The keys parsed so far (what a lookup has cost)."""
        return frozenset(self._values) if self._text is not None else frozenset(self)


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


__all__ = ["LazyObject"]
