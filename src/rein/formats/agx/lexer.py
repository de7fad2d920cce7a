"""Text to tokens for AGX.

One compiled pattern does the common work; the slow paths only run on input that is about to
be rejected, so they can afford to explain what to write instead.

A ``-`` is always an operator token, never part of a number: ``1-1``, ``x -1`` and
``len(a)-1`` are subtraction. (The AGS reference validator lexes ``-1`` as a signed literal
and so rejects those three; rein does not copy that.)
"""

from __future__ import annotations

import re
from typing import NamedTuple, NoReturn

from rein.formats.agx.errors import AgxSyntaxError

KEYWORDS = frozenset({"true", "false", "null", "and", "or", "not", "in"})

# Token kinds.
NUM = "number"
STR = "string"
NAME = "name"
KW = "keyword"
OP = "operator"
END = "end"


class Token(NamedTuple):
    """One token: its kind, its value (decoded for strings and numbers), where it starts and
    ends in the text (0-based, end exclusive)."""

    kind: str
    value: object
    start: int
    end: int


# Whitespace matches nothing, so ``finditer`` skips it; ``bad`` catches every other character
# the language has no token for, so nothing is skipped silently.
_TOKEN = re.compile(
    r"""
      (?P<number>[0-9]+(?:\.[0-9]+)?)
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!()\[\],.])
    | (?P<bad>\S)
    """,
    re.VERBOSE | re.DOTALL,
)
_new_token = tuple.__new__  # NamedTuple's own constructor is Python code; this is not

_EXPONENT = re.compile(r"[eE][+-]?[0-9]+")
_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "/": "/",
    "\\": "\\",
    '"': '"',
    "'": "'",
}


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with one ``END`` token. Raises AgxSyntaxError."""
    tokens: list[Token] = []
    append = tokens.append
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        pos, end = m.span()
        if kind == "name":
            word = m.group()
            append(_new_token(Token, (KW if word in KEYWORDS else NAME, word, pos, end)))
        elif kind == "op":
            op = m.group()
            if op == "." and text[end:end + 1] in _DIGITS and _starts_operand(tokens):
                digits = re.match(r"[0-9]+", text[end:])
                written = "." + (digits.group() if digits else "")
                _fail(text, pos, f"'{written}' is not a number: write 0{written}",
                      "AGX numbers start with a digit")
            append(_new_token(Token, (OP, op, pos, end)))
        elif kind == "number":
            append(_new_token(Token, (NUM, _number(text, m.group(), pos, end), pos, end)))
        elif kind == "string":
            append(_new_token(Token, (STR, _string(text, m.group(), pos), pos, end)))
        else:
            _reject_character(text, pos)
    size = len(text)
    append(_new_token(Token, (END, None, size, size)))
    return tokens


_DIGITS = frozenset("0123456789")


def _starts_operand(tokens: list[Token]) -> bool:
    """True when the next token must begin an operand (so ``.`` cannot be member access)."""
    if not tokens:
        return True
    last = tokens[-1]
    return last.kind == OP and last.value not in (")", "]")


def _number(text: str, raw: str, start: int, end: int) -> int | float:
    following = text[end:end + 1]
    if following == ".":
        after = text[end + 1:end + 2]
        if after.isdigit():
            _fail(text, end, f"a number has at most one decimal point (after {raw!r})",
                  "write one decimal number such as 1.5")
        _fail(text, end, f"'{raw}.' is not a number: write {raw}.0 or {raw}",
              "a decimal point needs digits on both sides")
    if following and (following.isalpha() or following == "_"):
        exponent = _EXPONENT.match(text, end)
        if exponent:
            written = text[start:exponent.end()]
            _fail(text, start, f"exponents are not supported ({written!r})",
                  "write the number out in full, e.g. 1000 instead of 1e3")
        _fail(text, end, f"a number cannot run into a name ({text[start:end + 1]!r}...)",
              "put an operator or a space between them")
    return float(raw) if "." in raw else int(raw)


def _string(text: str, raw: str, start: int) -> str:
    body = raw[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    base = start + 1
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        code = body[i + 1]  # the pattern guarantees a character after each backslash
        if code in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[code])
            i += 2
            continue
        if code != "u":
            _fail(text, base + i, f"unknown escape '\\{code}' in a string",
                  "escapes are \\n \\t \\r \\b \\f \\/ \\\\ \\\" \\' and \\uXXXX; "
                  "write '\\\\' for a backslash")
        unit = _hex4(text, body, i, base)
        i += 6
        if 0xD800 <= unit <= 0xDBFF and body.startswith("\\u", i):
            low = _hex4(text, body, i, base)
            if 0xDC00 <= low <= 0xDFFF:
                unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                i += 6
        if 0xD800 <= unit <= 0xDFFF:
            _fail(text, base + i - 6, "lone surrogate in a \\u escape",
                  "write the character itself, or a high and low surrogate pair")
        out.append(chr(unit))
    return "".join(out)


def _hex4(text: str, body: str, i: int, base: int) -> int:
    digits = body[i + 2:i + 6]
    if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
        _fail(text, base + i, "'\\u' must be followed by exactly four hex digits",
              "write e.g. \\u00e9")
    return int(digits, 16)


_CHARACTER_ADVICE = {
    "=": ("'=' is not an operator", "to compare, write '=='"),
    "&": ("'&' is not an operator", "write '&&' (or 'and') for logical and"),
    "|": ("'|' is not an operator", "write '||' (or 'or') for logical or"),
    "{": ("object literals are not supported",
          "declare the object in the document (context, params) or parse one with json('...')"),
    "?": ("conditional expressions 'a ? b : c' are not supported",
          "use default(x, fallback), or route with separate edges"),
    "#": ("comments are not supported in expressions", "remove the comment"),
}


def _reject_character(text: str, pos: int) -> NoReturn:
    ch = text[pos]
    if ch in "\"'":
        _fail(text, pos, "unterminated string", f"close it with {ch}")
    if text.startswith("${{", pos):
        _fail(text, pos, "'${{ }}' interpolation is for templates, not expressions",
              "in expression position write the expression alone, without '${{' and '}}'")
    if text.startswith("}}", pos):
        _fail(text, pos, "'}}' without a matching '${{'", "remove it")
    message, hint = _CHARACTER_ADVICE.get(ch, (None, None))
    if message is None:
        if ch.isalpha() or ch.isdigit():
            message = f"unexpected character {ch!r}"
            hint = "names use ASCII letters, digits and '_'; numbers use ASCII digits"
        else:
            message = f"unexpected character {ch!r}"
            hint = "remove it, or put it inside a quoted string"
    _fail(text, pos, message, hint)


def _fail(text: str, offset: int, message: str, hint: str | None) -> NoReturn:
    raise AgxSyntaxError(message, offset=offset, text=text, hint=hint)
