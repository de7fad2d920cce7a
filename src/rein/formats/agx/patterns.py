"""Regular expressions on text an agent produced: matched in linear time, or refused.

AGX ``matches()``, the ``regex`` criterion and a command criterion's
``expect_stdout_matches`` search text an agent wrote, with a pattern a graph (or, through an
expression, an agent) wrote. Python's ``re`` backtracks: ``^(\\w+\\s?)*$`` takes seconds on
24 characters and twice as long for each one more. So patterns run on RE2 (the
``google-re2`` package), whose time is linear in the length of the text, whatever the
pattern.

Patterns are written as for Python's ``re``, less the constructs that need backtracking: a
pattern that uses one (a backreference ``\\1``, lookahead ``(?=``, lookbehind ``(?<=``, an
atomic group ``(?>``, a possessive quantifier ``a++``, a conditional ``(?(1)``) or a counted
repetition over 1000 is refused with the construct named (:class:`PatternError`), and
callers report it before a run where they can. What Python spells otherwise than RE2 is
translated (:func:`_translate`): ``\\Z``, ``\\uXXXX``, ``\\N{NAME}``, ``{,n}``, ``(?#...)``,
Unicode ``\\d \\w \\s`` (RE2's are ASCII; the inline flag ``(?a)`` keeps them so), ``$``
matching before a final newline, and the verbose flag ``x``. What remains different:
``\\b`` and ``\\B`` are ASCII word boundaries, ``\\W`` and ``\\S`` inside a character class are
ASCII, and ``$`` in a scoped ``(?m:...)`` group matches only at the end.

Flags ``i``, ``m``, ``s`` are RE2's own, ``x`` is applied here, and so are Python's leading
inline flags (``(?x)``, ``(?a)``).
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

MAX_PATTERN_CHARS = 10_000  # longer patterns are refused: compiling is work too
MAX_PROGRAM_BYTES = 8 << 20  # RE2's memory for one compiled pattern
FLAGS = "imsx"
_INLINE = re.compile(r"\(\?([aiLmsux]+)\)")  # Python's global inline flags, at the start
# What RE2 says about a construct Python accepts, and its name for a person.
_CONSTRUCTS = (
    ("invalid perl operator: (?=", "lookahead `(?=...)`"),
    ("invalid perl operator: (?!", "negative lookahead `(?!...)`"),
    ("invalid perl operator: (?<=", "lookbehind `(?<=...)`"),
    ("invalid perl operator: (?<!", "negative lookbehind `(?<!...)`"),
    ("invalid perl operator: (?>", "an atomic group `(?>...)`"),
    ("invalid perl operator: (?(", "a conditional `(?(...)...)`"),
    ("invalid perl operator: (?P=", "a named backreference `(?P=name)`"),
    ("invalid named capture group: (?P=", "a named backreference `(?P=name)`"),
    ("invalid repetition size", "a counted repetition over 1000"),
    ("pattern too large", "a pattern too large to compile within its memory bound"),
)
HINT = ("rewrite the pattern without backreferences, lookaround, atomic groups, possessive "
        "quantifiers or conditionals (RE2 syntax): rein matches in time linear in the text")


class PatternError(Exception):
    """A pattern rein will not run: invalid, or needing a construct it does not support.

    ``reason`` names the problem without a location, ``detail`` is what is wrong with the
    pattern without naming it (for callers that name it their way), ``hint`` how to fix it,
    and ``refused`` is True when Python would accept the pattern (a construct the
    linear-time matcher cannot take) rather than it being invalid in any syntax.
    ``phrase`` is True when ``detail`` reads after the pattern's name ("is …", "uses …"),
    False when it is the parser's own words; ``flags`` is True when the flags are wrong,
    not the pattern (``detail`` is then ``reason``).
    """

    def __init__(self, reason: str, *, hint: str, refused: bool,
                 detail: str | None = None, phrase: bool = False,
                 flags: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = reason if detail is None else detail
        self.hint = hint
        self.refused = refused
        self.phrase = phrase
        self.flags = flags


class Found(NamedTuple):
    """A match: its text and where it starts and ends (in characters)."""

    start: int
    end: int
    text: str


class Pattern:
    """A compiled pattern; :meth:`search` takes time linear in the text."""

    __slots__ = ("_compiled", "source")

    def __init__(self, source: str, compiled: Any) -> None:
        self.source = source
        self._compiled = compiled

    def search(self, text: str) -> Found | None:
        """The leftmost match anywhere in ``text`` (unanchored), or None."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (from JSON escapes): match the bytes
            data = text.encode("utf-8", "surrogatepass")
            hit = self._compiled.search(data)
            if hit is None:
                return None
            start = len(data[:hit.start()].decode("utf-8", "surrogatepass"))
            found = hit.group(0).decode("utf-8", "surrogatepass")
            return Found(start=start, end=start + len(found), text=found)
        hit = self._compiled.search(text)
        return None if hit is None else Found(start=hit.start(), end=hit.end(),
                                               text=hit.group(0))


def compile_pattern(pattern: str, flags: str = "") -> Pattern:
    """``pattern`` with ``flags`` (any of ``imsx``), ready to search; :class:`PatternError`
    when rein will not run it."""
    unknown = sorted(set(flags) - set(FLAGS))
    if unknown:
        raise PatternError(f"unknown regex flag {unknown[0]!r}; use any of 'imsx'",
                           hint="use any of 'imsx'",
                           refused=False, flags=True)
    return _compiled(pattern, "".join(sorted(set(flags))))


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str, flags: str) -> Pattern:
    import re2

    if len(pattern) > MAX_PATTERN_CHARS:
        detail = f"is {len(pattern)} characters long, over {MAX_PATTERN_CHARS}"
        raise PatternError(f"regular expression {shown(pattern)} {detail}",
                           hint="use a shorter pattern", refused=True, detail=detail, phrase=True)
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        detail = "is not valid Unicode text (it holds a lone surrogate)"
        raise PatternError(f"regular expression {shown(pattern)} {detail}",
                           hint="remove the escaped surrogate from the pattern",
                           refused=False, detail=detail, phrase=True) from None
    body, flags = _leading_flags(pattern, flags)
    body = _translate(body, flags, ascii_only="a" in flags)
    inline = "".join(f for f in flags if f in "ims")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PROGRAM_BYTES
    try:
        return Pattern(pattern, re2.compile((f"(?{inline})" if inline else "") + body,
                                            options))
    except re2.error as exc:
        raise _explain(pattern, _message(exc)) from None


def _leading_flags(pattern: str, flags: str) -> tuple[str, str]:
    """Python's leading ``(?x)``-style flags taken into ``flags`` (RE2 has no ``x``)."""
    found = _INLINE.match(pattern)
    if found is None:
        return pattern, flags
    letters = set(found.group(1))
    if "L" in letters:
        detail = "uses the inline flag L (locale), which str patterns cannot take"
        raise PatternError(f"regular expression {shown(pattern)} {detail}",
                           hint="remove (?L); patterns match Unicode text", refused=False,
                           detail=detail, phrase=True)
    return pattern[found.end():], "".join(sorted(set(flags) | (letters & set(FLAGS + "a"))))


# Python's Unicode classes in RE2's words (RE2's own \d \w \s are ASCII); the second form
# goes inside a character class, None where RE2 has none (a negated class in a class).
_CLASSES = {
    "d": (r"\p{Nd}", r"\p{Nd}"), "D": (r"\P{Nd}", r"\P{Nd}"),
    "w": (r"[\p{L}\p{N}_]", r"\p{L}\p{N}_"), "W": (r"[^\p{L}\p{N}_]", None),
    "s": (r"[\s\v\x{1c}-\x{1f}\x{85}\p{Z}]", r"\s\v\x{1c}-\x{1f}\x{85}\p{Z}"),
    "S": (r"[^\s\v\x{1c}-\x{1f}\x{85}\p{Z}]", None),
}
_HEX = {"u": 4, "U": 8}


def _translate(pattern: str, flags: str, *, ascii_only: bool) -> str:
    """Python's spelling of what RE2 spells otherwise: ``\\Z``, ``\\u`` and ``\\N{...}``
    escapes, ``{,n}``, ``(?#...)`` comments, Unicode ``\\d \\w \\s``, ``$`` before a
    final newline without ``m``, and verbose mode (``x``): whitespace and ``#`` comments
    outside a class are dropped, an escaped one stands for itself."""
    verbose, multiline = "x" in flags, "m" in flags
    out: list[str] = []
    i, n, in_class, class_first = 0, len(pattern), False, 0
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            text, i = _escape(pattern, i, in_class=in_class, verbose=verbose,
                              ascii_only=ascii_only)
            out.append(text)
            continue
        if in_class:
            in_class = not (c == "]" and i >= class_first)
            out.append(c)
        elif c == "[":
            in_class, class_first = True, i + 1 + (pattern[i + 1:i + 2] == "^")
            class_first += pattern[class_first:class_first + 1] == "]"
            out.append(c)
        elif pattern.startswith("(?#", i):
            i = pattern.find(")", i)
            i = n if i < 0 else i
        elif verbose and c == "#":
            i = pattern.find("\n", i)
            i = n if i < 0 else i
        elif verbose and c.isspace():
            pass
        elif c == "{" and (bound := re.match(r"\{,(\d+)\}", pattern[i:])) is not None:
            out.append("{0," + bound.group(1) + "}")
            i += bound.end() - 1
        elif c == "$" and not multiline:
            out.append(r"(?:\n?\z)")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _escape(pattern: str, i: int, *, in_class: bool, verbose: bool,
            ascii_only: bool) -> tuple[str, int]:
    """The escape at ``pattern[i]`` in RE2's spelling, and the index after it."""
    letter = pattern[i + 1]
    if letter in _HEX:
        digits = pattern[i + 2:i + 2 + _HEX[letter]]
        if len(digits) == _HEX[letter] and all(d in "0123456789abcdefABCDEF" for d in digits):
            return f"\\x{{{digits}}}", i + 2 + len(digits)
    if letter == "N" and pattern.startswith("{", i + 2) and "}" in pattern[i + 3:]:
        import unicodedata

        end = pattern.index("}", i + 3)
        try:
            return f"\\x{{{ord(unicodedata.lookup(pattern[i + 3:end])):x}}}", end + 1
        except KeyError:
            pass
    if letter == "Z" and not in_class:
        return r"\z", i + 2
    if verbose and (letter.isspace() or letter == "#"):
        return f"\\x{{{ord(letter):x}}}", i + 2
    if letter in _CLASSES and not ascii_only:
        spelled = _CLASSES[letter][1 if in_class else 0]
        if spelled is not None:
            return spelled, i + 2
    return pattern[i:i + 2], i + 2


def shown(pattern: str, limit: int = 120) -> str:
    """``pattern`` quoted for a message, cut at ``limit`` characters."""
    return repr(pattern) if len(pattern) <= limit else repr(pattern[:limit]) + "..."


def _message(exc: BaseException) -> str:
    said = exc.args[0] if exc.args else str(exc)
    return said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)


def _explain(pattern: str, said: str) -> PatternError:
    """Why RE2 refused ``pattern``: a construct Python accepts, or an invalid pattern (in
    Python's words, which name the position)."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        return PatternError(f"invalid regular expression {shown(pattern)}: {exc}",
                            hint="fix the pattern", refused=False, detail=str(exc))
    construct = next((name for text, name in _CONSTRUCTS if text in said), None)
    if construct is None and re.search(r"invalid escape sequence: \\[1-9]", said):
        construct = "a backreference `\\1`"
    if construct is None and re.search(r"bad repetition operator: \S*[*+?}]\+$", said):
        construct = "a possessive quantifier `a++`"
    if construct is None:
        construct = f"a construct the linear-time matcher does not support ({said})"
    detail = f"uses {construct}, which needs backtracking: rein does not run it"
    return PatternError(f"regular expression {shown(pattern)} {detail}", hint=HINT, refused=True,
                        detail=detail, phrase=True)


__all__ = ["FLAGS", "HINT", "Found", "Pattern", "PatternError", "compile_pattern", "shown"]
