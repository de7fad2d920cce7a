"""Where a JSON Pointer sits in a document's text: (line, column), from YAML's event parser.

JSON parses as YAML, so one walk of the event stream serves both formats. Imported only when
a report needs a position (a finding, a load error), never by a clean run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, overload

from yaml import YAMLError

try:  # libyaml's event parser; PyYAML's pure-Python one behaves the same, only slower
    from yaml._yaml import CParser as EventParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.loader import SafeLoader as EventParser  # type: ignore[assignment]  # same get_event()

from yaml.events import (
    AliasEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from rein.formats.pointers import escape

__all__ = ["EventParser", "locate_pointers", "location_index"]


def location_index(text: str) -> dict[str, tuple[int, int]]:
    """JSON Pointer → (line, column), 0-based, of every value and key. JSON parses as YAML."""
    index: dict[str, tuple[int, int]] = {}
    try:
        parser = EventParser(text)
        stack: list[list[Any]] = []  # [pointer, is_map, pending key or None, next index]
        while True:
            event = parser.get_event()
            if isinstance(event, StreamEndEvent):
                break
            if isinstance(event, (MappingEndEvent, SequenceEndEvent)):
                stack.pop()
                continue
            if not isinstance(event, (ScalarEvent, AliasEvent, MappingStartEvent,
                                      SequenceStartEvent)):
                continue
            mark = _position(event)
            if stack:
                frame = stack[-1]
                if frame[1] and frame[2] is None:  # this event is a key
                    key = event.value if isinstance(event, ScalarEvent) else "?"
                    frame[2] = key
                    index.setdefault(frame[0] + "/" + escape(str(key)), mark)
                    continue
                if frame[1]:
                    here = frame[0] + "/" + escape(str(frame[2]))
                    frame[2] = None
                else:
                    here = frame[0] + "/" + str(frame[3])
                    frame[3] += 1
                    index[here] = mark
            else:
                here = ""
                index[here] = mark
            if isinstance(event, MappingStartEvent):
                stack.append([here, True, None, 0])
            elif isinstance(event, SequenceStartEvent):
                stack.append([here, False, None, 0])
    except (YAMLError, ValueError, IndexError):  # best effort: a parse problem means no index
        pass
    return index


@overload
def locate_pointers(text: str, wanted: Iterable[str]) -> dict[str, tuple[int, int]]: ...
@overload
def locate_pointers(text: str, wanted: Iterable[str], *, strict: bool
                    ) -> dict[str, tuple[int, int]] | None: ...
def locate_pointers(text: str, wanted: Iterable[str], *, strict: bool = False
                    ) -> dict[str, tuple[int, int]] | None:
    """The entries of :func:`location_index` for ``wanted`` and their ancestors only
    (``strict``: ``None`` when the text does not parse, rather than what was found so far).

    A report usually has a handful of findings in a document of thousands of keys, so this
    walks only the containers on the way to a wanted pointer (the others are skipped by
    counting their start and end events, with no pointer built) and stops as soon as every
    wanted pointer is found or known to be absent. The positions are those of the full index.
    """
    remaining: set[str] = set()
    children: dict[str, set[str]] = {}  # a pointer -> its wanted children not found yet
    for ptr in wanted:
        while ptr not in remaining:
            remaining.add(ptr)
            parent, sep, _ = ptr.rpartition("/")
            if not sep:
                break
            children.setdefault(parent, set()).add(ptr)
            ptr = parent
    found: dict[str, tuple[int, int]] = {}

    def settle(ptr: str, mark: tuple[int, int] | None) -> None:
        if mark is not None:
            found.setdefault(ptr, mark)
        remaining.discard(ptr)
        parent, sep, _ = ptr.rpartition("/")
        if sep and parent in children:
            children[parent].discard(ptr)

    def absent_below(ptr: str) -> None:
        # ptr holds no container (or has just closed): what is still wanted below it is absent
        todo = list(children.pop(ptr, ()))
        while todo:
            gone = todo.pop()
            remaining.discard(gone)
            todo.extend(children.pop(gone, ()))

    try:
        parser = EventParser(text)
        get = parser.get_event
        stack: list[list[Any]] = []  # [pointer, is_map, pending key or None, next index]
        while remaining:
            event = get()
            if isinstance(event, StreamEndEvent):
                break
            if isinstance(event, (MappingEndEvent, SequenceEndEvent)):
                absent_below(stack.pop()[0])
                continue
            if not isinstance(event, (ScalarEvent, AliasEvent, MappingStartEvent,
                                      SequenceStartEvent)):
                continue
            if stack:
                frame = stack[-1]
                if frame[1] and frame[2] is None:  # this event is a key
                    key = event.value if isinstance(event, ScalarEvent) else "?"
                    frame[2] = key
                    here = frame[0] + "/" + escape(str(key))
                    if here in remaining:
                        settle(here, _position(event))
                    continue
                if frame[1]:
                    here = frame[0] + "/" + escape(str(frame[2]))
                    frame[2] = None
                else:
                    here = frame[0] + "/" + str(frame[3])
                    frame[3] += 1
                    if here in remaining:
                        settle(here, _position(event))
            else:
                here = ""
                if here in remaining:
                    settle(here, _position(event))
            if not isinstance(event, (MappingStartEvent, SequenceStartEvent)):
                absent_below(here)
            elif here in children:
                stack.append([here, isinstance(event, MappingStartEvent), None, 0])
            else:
                _skip_container(get)
    except (YAMLError, ValueError, IndexError):  # best effort, as location_index
        if strict:
            return None
    return found


def _skip_container(get: Any) -> None:
    """Read events up to the end of the container just started, looking at nothing else."""
    depth = 1
    step = _DEPTH_STEP
    while depth > 0:  # the end of the stream ends it too (a negative step)
        depth += step.get(type(get()), 0)


# How each event type moves the nesting depth. A type lookup per event: the skipped part of
# a large document is most of its events.
_DEPTH_STEP: dict[type, int] = {MappingStartEvent: 1, SequenceStartEvent: 1,
                                MappingEndEvent: -1, SequenceEndEvent: -1,
                                StreamEndEvent: -(1 << 30), type(None): -(1 << 30)}


def _position(event: Event) -> tuple[int, int]:
    """Where an event starts; both parsers always set the mark, (0, 0) stands in otherwise."""
    mark = event.start_mark
    return (mark.line, mark.column) if mark is not None else (0, 0)
