"""The YAML half of the document loader: PyYAML's event stream read into plain JSON data.

Kept apart from :mod:`rein.formats.loader` so that reading JSON (every driver envelope, the
graph cache, the run store) never imports PyYAML; :func:`rein.formats.loader.load_text`
imports this module for YAML text only. Scalars resolve by the YAML 1.2 core schema, and
anchors, aliases, depth and size are bounded by the loader's limits.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from yaml import YAMLError as _YAMLError
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from rein.errors import LoadError, Location
from rein.formats.locations import EventParser
from rein.formats.numbers import (
    MAX_INTEGER_BITS,
    BadNumber,
    float_literal,
    int_literal,
    too_deep,
    too_long,
)
from rein.formats.pointers import escape


class Limits(Protocol):
    """The bounds this reader keeps (:class:`rein.formats.loader.LoadLimits`, whose module
    imports this one for YAML text)."""

    @property
    def max_depth(self) -> int: ...
    @property
    def max_alias_nodes(self) -> int: ...


__all__ = ["load_yaml"]


_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?[0-9]+\Z")
_OCT = re.compile(r"0o[0-7]+\Z")
_HEX = re.compile(r"0x[0-9a-fA-F]+\Z")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_NONFINITE = re.compile(r"[-+]?\.(?:inf|Inf|INF)\Z|\.(?:nan|NaN|NAN)\Z")
_MAYBE_SPECIAL = frozenset("0123456789+-.~nNtTfF")
# What the reading loop sends to _plain: a number, null or boolean starts with a digit, a
# sign, a dot or "~", or is one of the words; most names and ids start with n, t or f and
# are none of these, so they skip the call.
_NUMERIC_START = frozenset("0123456789+-.~")
_WORDS = _NULLS | frozenset(_BOOLS)

# The longest string read into one shared object (see _read_events): longer ones are
# mostly unique texts, whose lookup would cost more than it saves.
_SHARED_MAX = 40

_TAG = "tag:yaml.org,2002:"
_STR, _INT_TAG, _FLOAT_TAG = _TAG + "str", _TAG + "int", _TAG + "float"
_BOOL_TAG, _NULL_TAG = _TAG + "bool", _TAG + "null"
_MAP_TAGS = frozenset({None, "!", _TAG + "map"})
_SEQ_TAGS = frozenset({None, "!", _TAG + "seq"})


class _Bad(Exception):
    """A YAML problem found while reading, with its libyaml mark."""

    def __init__(self, kind: str, message: str, mark: Any, hint: str | None = None) -> None:
        self.kind, self.message, self.mark, self.hint = kind, message, mark, hint


def _plain(value: str, mark: Any) -> Any:
    """Resolve a plain (unquoted, untagged) scalar by the YAML 1.2 core schema."""
    if not value:
        return None
    if value[0] not in _MAYBE_SPECIAL:
        return value
    if value in _NULLS:
        return None
    b = _BOOLS.get(value)
    if b is not None:
        return b
    try:
        if _INT.match(value):
            return int_literal(value)
        if _FLOAT.match(value):
            return float_literal(value)
        if _OCT.match(value):
            return _based(value, 8)
        if _HEX.match(value):
            return _based(value, 16)
    except BadNumber as bad:
        raise _Bad(bad.kind, bad.message, mark, bad.hint) from None
    if _NONFINITE.match(value):
        raise _Bad("non_finite", f"non-finite number {value!r}", mark,
                   "JSON cannot represent infinities or NaN: use a finite number or quote it")
    return value


def _based(literal: str, base: int) -> int:
    """A ``0o``/``0x`` literal, held to the same bound as decimal ones."""
    if len(literal) > 2 + MAX_INTEGER_BITS:  # more digits than bits: over the bound
        raise too_long(literal)
    value = int(literal, base)
    if value.bit_length() > MAX_INTEGER_BITS:
        raise too_long(literal)
    return value


def _tagged(tag: str, value: str, mark: Any) -> Any:
    if tag in ("!", _STR):
        return value
    if tag == _NULL_TAG and value in _NULLS:
        return None
    if tag == _BOOL_TAG and value in _BOOLS:
        return _BOOLS[value]
    if tag == _INT_TAG:
        resolved = _plain(value, mark)
        if isinstance(resolved, int) and not isinstance(resolved, bool):
            return resolved
    if tag == _FLOAT_TAG:
        resolved = _plain(value, mark)
        if isinstance(resolved, (int, float)) and not isinstance(resolved, bool):
            return float(resolved)
    if tag.startswith(_TAG) and tag[len(_TAG):] in ("null", "bool", "int", "float"):
        raise _Bad("syntax", f"{value!r} is not a valid !!{tag[len(_TAG):]}", mark)
    raise _bad_tag(tag, mark)


def _bad_tag(tag: str | None, mark: Any) -> _Bad:
    return _Bad("bad_tag", f"unsupported tag {tag!r}", mark,
                "documents are plain JSON data: remove the tag")


def load_yaml(text: str, source: str, limits: Limits, line_offset: int,
              sections: dict[str, tuple[int, int]] | None = None) -> Any:
    """The data of a YAML document, read under ``limits``; a problem is a LoadError.
    ``sections``, when given, is filled as :func:`_read_events` says."""
    try:
        return _read_events(text, limits, sections)
    except _Bad as bad:
        loc = Location(file=source)
        if bad.mark is not None:
            loc = Location(file=source, line=bad.mark.line + 1 + line_offset,
                           column=bad.mark.column + 1)
        raise LoadError(bad.message, kind=bad.kind, location=loc, hint=bad.hint) from None
    except _YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        message = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
        kind = "too_deep" if "nesting depth" in message else "syntax"
        loc = Location(file=source)
        if mark is not None:
            loc = Location(file=source, line=mark.line + 1 + line_offset, column=mark.column + 1)
        raise LoadError(message, kind=kind, location=loc) from None
    except RecursionError:
        raise too_deep(source, limits.max_depth) from None


_NOKEY = object()


def _clone(value: Any) -> Any:
    """A deep copy of plain JSON data, done in C (much faster than copy.deepcopy)."""
    return json.loads(json.dumps(value))


def _read_events(text: str, limits: Limits,
                 sections: dict[str, tuple[int, int]] | None = None) -> Any:
    """The document's data. ``sections`` (when given) gets, for each entry of a block mapping
    that is the value of a top-level key (``/nodes/<id>``, ``/outputs/<name>``), the text
    offsets of its lines, [start of the key's line, start of the next entry's line): where a
    finding inside it is located without reading the whole text again
    (:meth:`rein.formats.loader.Document.prepare`)."""
    parser = EventParser(text)
    get = parser.get_event
    anchors: dict[str, tuple[Any, int]] = {}
    open_anchors: set[str] = set()
    # The open container is held in locals (cur, is_map, key); the ones around it are saved
    # on ``stack`` as (container, is_map, pending key, anchor, count at start).
    stack: list[tuple[Any, bool, Any, str | None, int]] = []
    cur: Any = None
    is_map = False
    key: Any = _NOKEY
    counter = 0  # values read, counting what aliases add
    alias_added = 0
    max_depth, max_alias = limits.max_depth, limits.max_alias_nodes
    root: Any = _NOKEY
    documents = 0
    special, words = _NUMERIC_START, _WORDS
    # One object per distinct short string (keys, types, ids, short texts), as the JSON
    # decoder does for keys: a graph repeats the same few keys and words on every node, and
    # a 100,000-node graph's data held each of them a hundred thousand times.
    strings: dict[str, str] = {}
    share, shared_max = strings.setdefault, _SHARED_MAX
    scalar_t, map_t, seq_t = ScalarEvent, MappingStartEvent, SequenceStartEvent
    map_end_t, seq_end_t, alias_t = MappingEndEvent, SequenceEndEvent, AliasEvent
    depth = 0
    anchor_of_cur: str | None = None
    start_of_cur = 0
    # the block mapping at depth 2 whose entries go to ``sections``: its pointer, the
    # pointer and line offset of its entry being read (None: none, or not a block mapping)
    section_of: str | None = None
    entry: str | None = None
    entry_start = 0

    # isinstance against the event classes held in locals: as fast as comparing type(event),
    # and it lets the type checker see which fields each branch may read
    while True:
        event = get()
        if isinstance(event, scalar_t):
            counter += 1
            tag = event.tag
            value: Any = event.value
            if tag is None:
                if event.implicit[0] and (not value or value[0] in special or value in words):
                    value = _plain(value, event.start_mark)  # null, bool, numbers
            elif tag != "!":
                value = _tagged(tag, value, event.start_mark)
            if type(value) is str and len(value) <= shared_max:
                value = share(value, value)
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1)
        elif isinstance(event, (map_t, seq_t)):
            if depth >= max_depth:
                raise _Bad("too_deep", f"the document nests deeper than {max_depth} levels",
                           event.start_mark, "flatten it, or raise [limits] max_depth in your own rein.toml")
            is_map_start = isinstance(event, map_t)
            if event.tag not in (_MAP_TAGS if is_map_start else _SEQ_TAGS):
                raise _bad_tag(event.tag, event.start_mark)
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            counter += 1
            depth += 1
            if depth > 1:
                stack.append((cur, is_map, key, anchor_of_cur, start_of_cur))
            anchor_of_cur, start_of_cur = event.anchor, counter
            if depth == 2 and sections is not None:
                top = stack[0]
                section_of = ("/" + escape(top[2]) if is_map_start and top[1]
                              and not event.flow_style and type(top[2]) is str else None)
                entry = None
            if is_map_start:
                cur, is_map = {}, True
            else:
                cur, is_map = [], False
            key = _NOKEY
            continue
        elif isinstance(event, (map_end_t, seq_end_t)):
            if depth == 2 and entry is not None and sections is not None:
                if (mark := event.start_mark) is not None:  # libyaml always marks events
                    sections[entry] = (entry_start, mark.index - mark.column)
                entry = section_of = None
            value = cur
            if anchor_of_cur is not None:
                open_anchors.discard(anchor_of_cur)
                anchors[anchor_of_cur] = (value, counter - start_of_cur + 1)
            depth -= 1
            if depth:
                cur, is_map, key, anchor_of_cur, start_of_cur = stack.pop()
            else:
                cur = None
        elif isinstance(event, alias_t):
            name = event.anchor
            if name in open_anchors:
                raise _Bad("alias_limit", f"alias *{name} refers to a node that contains it",
                           event.start_mark, "recursive aliases cannot be represented as JSON")
            hit = anchors.get(name) if name is not None else None  # libyaml names every alias
            if hit is None:
                raise _Bad("syntax", f"unknown alias *{name}", event.start_mark)
            shared, size = hit
            alias_added += size
            counter += size
            if alias_added > max_alias:
                raise _Bad(
                    "alias_limit",
                    f"aliases expand to more than {max_alias:,} values",
                    event.start_mark,
                    "this looks like an alias bomb; raise [limits] max_alias_nodes in your own "
                    "rein.toml if trusted",
                )
            # Each use is its own value: a later change to one must not show in another.
            value = _clone(shared) if isinstance(shared, (dict, list)) else shared
        elif isinstance(event, DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise _Bad("syntax", "more than one YAML document in the stream",
                           event.start_mark, "remove the second '---' document")
            continue
        elif isinstance(event, StreamEndEvent):
            break
        else:  # StreamStart, DocumentEnd
            continue

        if not depth:
            root = value
        elif not is_map:
            cur.append(value)
        elif key is _NOKEY:
            if type(value) is not str:
                raise _Bad(
                    "non_string_key",
                    f"mapping key {value!r} is not a string",
                    event.start_mark,
                    "quote the key: documents are JSON objects, whose keys are strings",
                )
            if value in cur:
                raise _Bad("duplicate_key", f"duplicate key {value!r}", event.start_mark,
                           "each key may appear once in a mapping")
            key = value
            if depth == 2 and section_of is not None and sections is not None and (
                    mark := event.start_mark) is not None:
                start = mark.index - mark.column
                if entry is not None:
                    sections[entry] = (entry_start, start)
                # only an entry whose key begins its line (a block mapping's, not after a
                # "? " or on the line of another)
                fits = not text[start:mark.index].strip()
                entry = section_of + "/" + escape(value) if fits else None
                entry_start = start
        else:
            cur[key] = value
            key = _NOKEY

    return None if root is _NOKEY else root
