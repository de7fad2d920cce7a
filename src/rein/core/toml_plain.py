"""The plain TOML most ``rein.toml`` files are written in, read without :mod:`tomllib`.

A cold ``rein next`` reads the configuration to learn that it leaves the turn's answer
alone (:mod:`rein.workers.driver.glance`), and importing :mod:`tomllib` (with ``typing``
and the patterns it compiles) costs more instructions than the rest of that turn's reading
together. :func:`read` reads a strict part of TOML 1.0 and returns exactly what
``tomllib.loads`` returns for it: the same keys in the same order, the same values of the
same types. For anything else, valid TOML outside that part or not TOML at all, it returns
``None``, and the caller reads the text with :mod:`tomllib`, which says what is wrong.

The part read here, line by line (``\\r\\n`` read as ``\\n``, as tomllib does):

- blank lines and comments;
- table headers ``[a]``, ``[a.b]`` of bare or quoted keys, each table declared once;
- ``key = value`` with one bare or quoted key, each key set once;
- values: strings on one line without escapes (``"..."``, ``'...'``), decimal integers
  and floats, ``true`` and ``false``, inline tables ``{ key = value, ... }``, and arrays
  of those, over several lines if need be, with comments and a trailing comma.

Not read here (``None``): escapes, strings over several lines, dotted keys, arrays of
tables, arrays directly in arrays, dates and times, ``inf`` and ``nan``, hexadecimal,
octal and binary integers. tests/core/test_toml_plain.py holds every answer equal to tomllib's.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

_BARE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_DIGITS = frozenset("0123456789")
# No pattern is compiled: compiling one costs a cold turn more than reading its file.


class _Outside(Exception):
    """Text outside the part read here."""


def read(text: str) -> dict[str, Any] | None:
    """What ``tomllib.loads(text)`` returns, when ``text`` is plain TOML (see the module
    docstring); ``None`` for anything else."""
    text = text.replace("\r\n", "\n")
    # No TOML text holds a control character other than the tab and the line's end, raw:
    # not a comment, a string nor a key. Such a text is not read here (tomllib says why),
    # nor, to tell it in one step, a text with a character Python does not print (a
    # non-breaking space, say): tomllib reads those.
    if not text.replace("\n", " ").replace("\t", " ").isprintable():
        return None
    try:
        return _Reader(text).document()
    except (_Outside, RecursionError):  # RecursionError: inline tables nested very deep
        return None


class _Reader:
    __slots__ = ("end", "frozen", "pos", "text")

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.end = text, 0, len(text)
        self.frozen: set[int] = set()  # the inline tables: no header opens one again

    def document(self) -> dict[str, Any]:
        root: dict[str, Any] = {}
        table, declared = root, set[tuple[str, ...]]()
        text = self.text
        while True:
            self.blanks()
            if self.pos == self.end:
                return root
            char = text[self.pos]
            if char == "[":
                if text.startswith("[[", self.pos):
                    raise _Outside("an array of tables")
                self.pos += 1
                path = self.key_path()
                if not text.startswith("]", self.pos) or path in declared:
                    raise _Outside("a malformed or repeated table header")
                declared.add(path)
                self.pos += 1
                table = root
                for part in path:
                    table = table.setdefault(part, {})
                    if not isinstance(table, dict) or id(table) in self.frozen:
                        raise _Outside("a table over a value")
            elif char not in "#\n":
                key = self.key()
                if not text.startswith("=", self.pos) or key in table:
                    raise _Outside("a dotted key, or a key set twice")
                self.pos += 1
                self.blanks()
                table[key] = self.value(in_array=False)
            self.statement_end()

    def blanks(self) -> None:
        """Past spaces and tabs."""
        text, pos, end = self.text, self.pos, self.end
        while pos < end and text[pos] in " \t":
            pos += 1
        self.pos = pos

    def comment(self) -> None:
        """Past a comment, up to its line's end."""
        if self.text.startswith("#", self.pos):
            found = self.text.find("\n", self.pos)
            self.pos = self.end if found < 0 else found

    def statement_end(self) -> None:
        """Past the blanks, the comment and the line's end after a statement."""
        self.blanks()
        self.comment()
        if self.pos < self.end:
            if self.text[self.pos] != "\n":
                raise _Outside("more on the line")
            self.pos += 1

    def array_blanks(self) -> None:
        """Past the blanks, line ends and comments between an array's values."""
        while self.pos < self.end:
            if self.text[self.pos] in " \t\n":
                self.pos += 1
            elif self.text[self.pos] == "#":
                self.comment()
            else:
                return

    def quoted(self) -> str:
        """A string on one line without escapes, opened at ``pos``."""
        text, pos = self.text, self.pos
        quote = text[pos]
        close = text.find(quote, pos + 1)
        if close < 0:
            raise _Outside("an unclosed string")
        body = text[pos + 1:close]
        if "\n" in body or (quote == '"' and "\\" in body) or \
                text.startswith(quote, close + 1):  # escapes, or a string of lines
            raise _Outside("a string with escapes or over several lines")
        self.pos = close + 1
        return body

    def key(self) -> str:
        """One key and the blanks after it."""
        text, pos = self.text, self.pos
        if pos < self.end and text[pos] in "\"'":
            key = self.quoted()
        else:
            line = text.find("\n", pos)
            rest = text[pos:] if line < 0 else text[pos:line]
            key = rest[:len(rest) - len(rest.lstrip(_BARE))]  # the bare key's characters
            if not key:
                raise _Outside("not a key")
            self.pos = pos + len(key)
        self.blanks()
        return key

    def key_path(self) -> tuple[str, ...]:
        """A table header's keys, ``a . b``."""
        self.blanks()
        path = [self.key()]
        while self.text.startswith(".", self.pos):
            self.pos += 1
            self.blanks()
            path.append(self.key())
        return tuple(path)

    def value(self, *, in_array: bool) -> Any:
        text, pos = self.text, self.pos
        char = text[pos:pos + 1]
        if char in ("\"", "'"):
            return self.quoted()
        if char == "[" and not in_array:
            return self.array()
        if char == "{":
            return self.inline()
        for word, value in (("true", True), ("false", False)):
            if text.startswith(word, pos):
                self.pos = pos + len(word)
                return value
        return self.number()

    def number(self) -> int | float:
        """A decimal number, as far as tomllib's RE_NUMBER matches it, converted as tomllib
        converts it: ``[+-]?(0|[1-9](_?[0-9])*)``, then ``.[0-9](_?[0-9])*`` and
        ``[eE][+-]?[0-9](_?[0-9])*`` when they follow, each making it a float."""
        text, start = self.text, self.pos
        pos = start + 1 if text.startswith(("+", "-"), start) else start
        after = pos + 1 if text.startswith("0", pos) else self.digits(pos)
        if after == pos:
            raise _Outside("another kind of value")
        pos, is_float = after, False
        if text.startswith(".", pos) and (after := self.digits(pos + 1)) > pos + 1:
            pos, is_float = after, True
        if text.startswith(("e", "E"), pos):
            sign = pos + 2 if text.startswith(("+", "-"), pos + 1) else pos + 1
            if (after := self.digits(sign)) > sign:
                pos, is_float = after, True
        self.pos = pos
        try:  # as tomllib converts them
            return float(text[start:pos]) if is_float else int(text[start:pos], 0)
        except ValueError:  # more digits than int() reads
            raise _Outside("an integer too long") from None

    def digits(self, pos: int) -> int:
        """Past ``[0-9](_?[0-9])*`` at ``pos`` (``pos`` itself when there is no digit)."""
        text, end = self.text, self.end
        if pos >= end or text[pos] not in _DIGITS:
            return pos
        pos += 1
        while pos < end:
            if text[pos] in _DIGITS:
                pos += 1
            elif text[pos] == "_" and pos + 1 < end and text[pos + 1] in _DIGITS:
                pos += 2
            else:
                break
        return pos

    def inline(self) -> dict[str, Any]:
        """``{ key = value, ... }``, as tomllib's parse_inline_table reads it."""
        table: dict[str, Any] = {}
        self.pos += 1
        self.blanks()
        closed = self.text.startswith("}", self.pos)
        while not closed:
            key = self.key()
            if not self.text.startswith("=", self.pos) or key in table:
                raise _Outside("a dotted key, or a key set twice")
            self.pos += 1
            self.blanks()
            table[key] = self.value(in_array=False)
            self.blanks()
            char = self.text[self.pos:self.pos + 1]
            if char not in ("}", ","):
                raise _Outside("an unclosed inline table")
            closed = char == "}"
            if not closed:
                self.pos += 1
                self.blanks()
        self.pos += 1
        self.frozen.add(id(table))
        return table

    def array(self) -> list[Any]:
        """``[ value, ... ]``, as tomllib's parse_array reads it."""
        items: list[Any] = []
        self.pos += 1
        self.array_blanks()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return items
        while True:
            items.append(self.value(in_array=True))
            self.array_blanks()
            char = self.text[self.pos:self.pos + 1]
            if char == "]":
                self.pos += 1
                return items
            if char != ",":
                raise _Outside("an unclosed array")
            self.pos += 1
            self.array_blanks()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return items


__all__ = ["read"]
