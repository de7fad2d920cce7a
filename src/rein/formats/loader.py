"""Bytes to data: JSON and YAML 1.2 into the same plain values, with limits and locations.

Both AGS graphs and OAP profiles come through here. The YAML reader walks libyaml's
event stream itself rather than using PyYAML's constructors, for three reasons:

* YAML 1.2 core schema: only ``true``/``false`` are booleans (``yes``/``on`` stay strings),
  ``null``/``Null``/``NULL``/``~``/empty are null, no timestamps, no merge keys, no custom tags;
* safety: duplicate keys, alias expansion beyond a bound (a 1 KB "billion laughs" document
  is refused after a handful of events), recursive aliases, nesting depth and size;
* speed: one pass with an explicit stack, no intermediate node tree.

Locations are not recorded on the hot path; :meth:`Document.locate` finds the line and
column of the pointers it is asked about (:mod:`rein.formats.pointers`), so only documents
with findings pay, and only for the part of the text up to their last finding.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Literal

from rein.core.frozen import Frozen
from rein.errors import LoadError, Location
from rein.formats.numbers import (
    BadNumber,
    float_literal,
    int_literal,
    too_deep,
)

Format = Literal["yaml", "json"]

_MIB = 1024 * 1024


class LoadLimits(Frozen):
    """Bounds on what a document may cost to read. Raise them in ``rein.toml`` ([limits])."""

    max_bytes: int = 32 * _MIB  # a 10,000-node graph is about 6 MB
    max_depth: int = 128  # containers nested in containers
    max_alias_nodes: int = 100_000  # values that aliases may add, in all


DEFAULT_LIMITS = LoadLimits()


class Document:
    """A loaded document: its data, where it came from, and a way back to source positions."""

    __slots__ = ("_asked", "_index", "_sections", "data", "format", "line_offset", "source",
                 "text")
    data: Any
    source: str
    format: Format
    text: str
    line_offset: int  # lines before ``text`` in the file (Markdown frontmatter)
    # Positions found so far, and the pointers already looked up (found or not).
    _index: dict[str, tuple[int, int]]
    _asked: set[str]
    # Where the entries of the top-level block mappings are in ``text`` (YAML only):
    # ``/nodes/<id>`` → [offset of its first line, offset of the next entry's line).
    _sections: Mapping[str, tuple[int, int]]

    def __init__(self, data: Any, source: str, format: Format, text: str,
                 line_offset: int = 0,
                 sections: Mapping[str, tuple[int, int]] | None = None) -> None:
        self.data, self.source, self.format, self.text = data, source, format, text
        self.line_offset = line_offset
        self._index = {}
        self._asked = set()
        self._sections = sections or {}

    def __repr__(self) -> str:
        return (f"Document(source={self.source!r}, format={self.format!r}, "
                f"line_offset={self.line_offset!r})")

    def prepare(self, pointers: Iterable[str]) -> None:
        """Look up many pointers in one pass of the text, before :meth:`locate` reads them.

        A pointer inside an entry of a top-level block mapping (``/nodes/<id>/...``) is
        looked up in that entry's lines alone, read as a document of their own at the same
        lines and columns: a finding at the end of a large graph costs its node, not a
        second pass over the whole text (``tests/formats/test_locate_large.py``). Anything
        else, or an entry its lines alone do not parse, takes the pass over the text."""
        new = {p for p in pointers if p not in self._asked}
        if not new:
            return
        from rein.formats.locations import locate_pointers  # YAML's parser

        whole: set[str] = set()
        inside: dict[str, list[str]] = {}  # an entry → the pointers within it
        for ptr in new:
            parts = ptr.split("/", 3)
            entry = "/".join(parts[:3])
            if len(parts) >= 3 and entry in self._sections:
                inside.setdefault(entry, []).append(ptr)
            else:
                whole.add(ptr)
        for entry, wanted in inside.items():
            found = self._in_section(entry, wanted)
            if found is None:
                whole.update(wanted)
            else:
                self._index.update(found)
        if whole:
            self._index.update(locate_pointers(self.text, whole))
        self._asked.update(new)

    def _in_section(self, entry: str, wanted: list[str]) -> dict[str, tuple[int, int]] | None:
        """The positions of ``wanted`` (pointers within ``entry``) from the entry's lines
        alone, preceded by as many empty lines as come before them; ``None`` when those
        lines do not parse on their own."""
        from rein.formats.locations import locate_pointers

        start, end = self._sections[entry]
        prefix = entry[:entry.index("/", 1)]  # "/nodes"
        lines = self.text.count("\n", 0, start)
        piece = "\n" * lines + self.text[start:end]
        relative = [p[len(prefix):] for p in wanted]
        found = locate_pointers(piece, relative, strict=True)
        if found is None or entry[len(prefix):] not in found:
            return None
        return {prefix + p: mark for p, mark in found.items()}

    def locate(self, ptr: str = "") -> Location:
        """The location of a JSON Pointer, falling back to its nearest located ancestor."""
        self.prepare((ptr,))
        probe = ptr
        while True:
            hit = self._index.get(probe)
            if hit is not None:
                line, column = hit
                return Location(
                    file=self.source,
                    line=line + 1 + self.line_offset,
                    column=column + 1,
                    pointer=ptr,
                )
            if not probe:
                return Location(file=self.source, pointer=ptr)
            probe = probe.rsplit("/", 1)[0]


# ---------------------------------------------------------------------------- entry points


def format_for(path: str | Path) -> Format:
    """JSON for ``.json`` files, YAML for everything else (YAML 1.2 is a superset of JSON)."""
    return "json" if str(path).lower().endswith(".json") else "yaml"


_READ_HINT = "check that the file exists and that you may read it"


def read_limited(path: str | Path, max_bytes: int, *, source: str | None = None) -> bytes:
    """The bytes of one regular file, at most ``max_bytes`` of them; a :class:`LoadError`
    otherwise, never an OSError.

    Opened without blocking and checked with ``fstat`` on the open descriptor, so a FIFO
    (which would wait for a writer), a device such as ``/dev/zero`` (endless), or a symlink
    to either is refused before a byte is read; and never more than ``max_bytes + 1`` bytes
    are read, whatever the size the file claims or grows to.
    """
    source = (str(path) if source is None else source).replace("\x00", "\\0")
    where = Location(file=source)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise LoadError(
            f"no such file: {source}", kind="not_found", location=where,
            hint="check the path (a relative path starts at the current directory)",
        ) from None
    except IsADirectoryError:
        raise LoadError(f"{source} is a folder, not a file", kind="unreadable",
                        location=where, hint="give the path of one file") from None
    except OSError as exc:
        raise LoadError(f"cannot read {source}: {exc.strerror}", kind="unreadable",
                        location=where, hint=_READ_HINT) from None
    except ValueError:  # the operating system cannot even be asked about such a name
        raise LoadError(f"the path {source} contains a NUL character", kind="unreadable",
                        location=where, hint="give the path of one file") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise LoadError(f"{source} is a folder, not a file", kind="unreadable",
                            location=where, hint="give the path of one file")
        if not stat.S_ISREG(info.st_mode):
            raise LoadError(
                f"{source} is not a regular file (a pipe, device or socket)",
                kind="unreadable", location=where,
                hint="give the path of a regular file; such files can block or never end",
            )
        _check_size(info.st_size, source, max_bytes)
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, _MIB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        raw = b"".join(chunks)
        _check_size(len(raw), source, max_bytes)  # it grew while being read
        return raw
    except OSError as exc:
        raise LoadError(f"cannot read {source}: {exc.strerror}", kind="unreadable",
                        location=where, hint=_READ_HINT) from None
    finally:
        os.close(fd)


def load_path(
    path: str | Path, *, limits: LoadLimits = DEFAULT_LIMITS, format: Format | None = None
) -> Document:
    """Read and parse one file. Every failure is a :class:`LoadError`, never an OSError."""
    raw = read_limited(path, limits.max_bytes)
    return load_bytes(raw, source=str(path), format=format or format_for(path), limits=limits)


def load_bytes(
    raw: bytes, *, source: str, format: Format, limits: LoadLimits = DEFAULT_LIMITS
) -> Document:
    """Parse UTF-8 bytes as JSON or YAML."""
    _check_size(len(raw), source, limits.max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise LoadError(
            f"not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}",
            kind="encoding", location=Location(file=source, line=line),
            hint="save the file as UTF-8",
        ) from None
    return load_text(text, source=source, format=format, limits=limits)


def load_text(
    text: str,
    *,
    source: str = "<input>",
    format: Format = "yaml",
    limits: LoadLimits = DEFAULT_LIMITS,
    line_offset: int = 0,
) -> Document:
    """Parse text as JSON or YAML. ``line_offset`` shifts reported lines (frontmatter)."""
    if len(text) > limits.max_bytes:  # characters ≤ bytes, so this is a cheap early bound
        _check_size(len(text.encode("utf-8")), source, limits.max_bytes)
    text = text.removeprefix("\ufeff")
    if "\x00" in text:
        off = text.index("\x00")
        raise LoadError(
            "the document contains a NUL character", kind="encoding",
            location=Location(file=source, line=text.count("\n", 0, off) + 1 + line_offset),
            hint="this looks like a binary file",
        )
    sections: dict[str, tuple[int, int]] = {}
    with _paused_for(len(text)):  # plain data, none of it garbage (rein.core.collector)
        if format == "json":
            data = _load_json(text, source, limits, line_offset)
        else:
            data = _load_yaml(text, source, limits, line_offset, sections)
    return Document(data=data, source=source, format=format, text=text, line_offset=line_offset,
                    sections=sections)


# Text from which reading builds enough containers for the collector's passes to count: a
# driver turn's documents are smaller, and neither need the pause nor import it.
LARGE_TEXT = 256 * 1024


def _paused_for(size: int) -> AbstractContextManager[None]:
    """The collector paused while a document of ``size`` characters is read, if large."""
    if size < LARGE_TEXT:
        return nullcontext()
    from rein.core.collector import paused

    return paused()


def _check_size(size: int, source: str, max_bytes: int) -> None:
    if size > max_bytes:
        raise LoadError(
            f"the document is {size:,} bytes, over the limit of {max_bytes:,}",
            kind="too_large", location=Location(file=source),
            hint="raise [limits] max_bytes in your own rein.toml (not the project's) if this "
                 "document is trusted",
        )


# ---------------------------------------------------------------------------- JSON


class _Duplicate(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def _literal_position(text: str, literal: str) -> tuple[int | None, int | None]:
    """Line and column of the first occurrence of a number literal."""
    match = re.search(r"(?<![\w.])" + re.escape(literal[:200]), text)
    if match is None:
        return None, None
    off = match.start()
    return text.count("\n", 0, off) + 1, off - (text.rfind("\n", 0, off) + 1) + 1


def _load_json(text: str, source: str, limits: LoadLimits, line_offset: int) -> Any:
    def loc(line: int | None = None, column: int | None = None) -> Location:
        return Location(file=source, line=None if line is None else line + line_offset,
                        column=column)

    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant,
                          parse_int=int_literal, parse_float=float_literal)
    except BadNumber as bad:
        line, column = _literal_position(text, bad.literal)
        raise LoadError(bad.message, kind=bad.kind, location=loc(line, column),
                        hint=bad.hint) from None
    except _Duplicate as dup:
        line, column = _json_key_position(text, dup.key)
        raise LoadError(
            f"duplicate key {dup.key!r}", kind="duplicate_key", location=loc(line, column),
            hint="each key may appear once in an object; JSON parsers disagree on which wins",
        ) from None
    except json.JSONDecodeError as exc:
        raise LoadError(
            f"invalid JSON: {exc.msg}", kind="syntax", location=loc(exc.lineno, exc.colno)
        ) from None
    except ValueError as exc:
        raise LoadError(
            f"{exc}: JSON has no NaN or Infinity", kind="non_finite", location=loc(),
            hint="use a finite number or a string",
        ) from None
    except RecursionError:
        raise too_deep(source, limits.max_depth) from None
    _check_depth(data, source, limits)
    if _SURROGATE_ESCAPE.search(text):
        _check_surrogates(data, source, line_offset)
    return data


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_surrogates(data: Any, source: str, line_offset: int) -> None:
    """A lone surrogate escape parses in Python but is not Unicode text: refuse it."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            strings = [value]
        elif isinstance(value, dict):
            strings = list(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
            continue
        else:
            continue
        for text in strings:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise LoadError(
                    f"the string {text[:40]!r} holds an unpaired surrogate escape",
                    kind="encoding", location=Location(file=source),
                    hint="a \\uD800-\\uDFFF escape must be half of a pair",
                ) from None


def _json_key_position(text: str, key: str) -> tuple[int | None, int | None]:
    """Line and column of the second occurrence of ``"key":`` (a good-enough pointer)."""
    pattern = re.compile(r'"' + re.escape(json.dumps(key)[1:-1]) + r'"\s*:')
    matches = list(pattern.finditer(text))
    if len(matches) < 2:
        return None, None
    off = matches[1].start()
    line = text.count("\n", 0, off) + 1
    return line, off - (text.rfind("\n", 0, off) + 1) + 1


def _check_depth(data: Any, source: str, limits: LoadLimits) -> None:
    stack: list[tuple[Any, int]] = [(data, 1)]
    max_depth = limits.max_depth
    while stack:
        value, depth = stack.pop()
        if depth > max_depth:
            raise too_deep(source, limits.max_depth)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))


# ---------------------------------------------------------------------------- YAML 1.2


def _load_yaml(text: str, source: str, limits: LoadLimits, line_offset: int,
               sections: dict[str, tuple[int, int]]) -> Any:
    # The YAML reader imports PyYAML: a driver turn reads only JSON and never pays for it.
    from rein.formats.loader_yaml import load_yaml

    return load_yaml(text, source, limits, line_offset, sections)
