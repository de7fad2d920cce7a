"""JSON Pointers (RFC 6901) and the map from pointers back to source positions."""

from __future__ import annotations

from typing import Any

from yaml import YAMLError

__all__ = ["EventParser", "escape", "location_index", "pointer", "resolve_pointer", "unescape"]

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


def _position(event: Event) -> tuple[int, int]:
    """Where an event starts; both parsers always set the mark, (0, 0) stands in otherwise."""
    mark = event.start_mark
    return (mark.line, mark.column) if mark is not None else (0, 0)


def escape(token: str) -> str:
    """Escape one JSON Pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str | int) -> str:
    """Build a JSON Pointer from tokens: ``pointer("nodes", "a", "inputs")``."""
    return "".join("/" + escape(str(t)) for t in tokens)


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def resolve_pointer(data: Any, ptr: str) -> Any:
    """The value at a JSON Pointer; raises KeyError when absent."""
    if not ptr:
        return data
    value = data
    for raw in ptr[1:].split("/"):
        token = unescape(raw)
        if isinstance(value, dict):
            value = value[token]
        elif isinstance(value, list) and token.isdigit():
            value = value[int(token)]
        else:
            raise KeyError(ptr)
    return value
