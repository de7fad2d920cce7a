"""One JSON-RPC message per line, read and written strictly: both stdio servers use it.

Python's ``json`` module takes more than JSON (``NaN``, ``Infinity``, UTF-8 that encodes
surrogates) and gives back what JSON cannot say (a number too large to hold, a string with a
lone surrogate), and it raises ``RecursionError`` on deep nesting. A server that hands such
a line on echoes ``NaN`` as an id, or stops: the reader dies, or a write fails forever. So
:func:`parse` answers every line it can read with what JSON-RPC 2.0 says: a line that is
not JSON is a parse error (-32700, id ``null``); JSON that is not a request, a notification
or a response is an invalid request (-32600, the id when it is a valid one, else ``null``);
a request whose params rein cannot take is invalid params (-32602, with its id). A bad
notification or response is dropped: JSON-RPC never answers one. :func:`encode` writes a
message as JSON, escaping what UTF-8 cannot carry, so no answer is ever lost to encoding.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

MAX_DEPTH = 100  # arrays and objects inside each other: rein's messages need a dozen
# A surrogate escape (\ud800-\udfff) in the raw line: only then can a string hold a lone one.
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


class Refusal(Frozen, kw_only=False):
    """A line answered with an error instead of being handled."""

    id: Any  # the request's id, or None when it has none that can be echoed
    code: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "error": {"code": self.code, "message": self.message}}


class _TooLarge:
    """A number JSON allows and rein cannot hold (beyond float range, or integer digits)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str) -> tuple[Any, list[_TooLarge]]:
    large: list[_TooLarge] = []

    def number(text: str, kind: type) -> Any:
        try:
            value = kind(text)
        except ValueError:  # an integer over Python's digit limit
            value = None
        if value is None or (kind is float and not math.isfinite(value)):
            large.append(_TooLarge(text))
            return large[-1]
        return value

    value = json.loads(text, parse_constant=_not_json,
                       parse_float=lambda t: number(t, float),
                       parse_int=lambda t: number(t, int))
    return value, large


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in item)
    return deepest


_KINDS = {bool: "true or false", list: "an array", dict: "an object"}


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (
        isinstance(value, int | float) and not isinstance(value, bool))


def _text(value: Any) -> bool:
    """Whether every string in ``value`` is Unicode text (no lone surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse(line: bytes) -> dict[str, Any] | Refusal | None:
    """The message on ``line``; a :class:`Refusal` to answer instead; or None for a line to
    drop unanswered (blank, or a bad notification or response)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Refusal(None, PARSE_ERROR, f"Parse error: not UTF-8 (byte {exc.start})")
    if not text.strip():
        return None
    try:
        message, large = _loads(text)
    except RecursionError:
        return Refusal(None, PARSE_ERROR,
                       f"Parse error: nested deeper than {MAX_DEPTH} levels")
    except ValueError as exc:
        return Refusal(None, PARSE_ERROR, f"Parse error: {exc}")
    if isinstance(message, list) and message:
        return Refusal(None, INVALID_REQUEST, "Invalid request: batches are not supported; "
                                              "send one message per line")
    if not isinstance(message, dict):
        return Refusal(None, INVALID_REQUEST, "Invalid request: not a JSON object")
    return _checked(message, large, line)


def _checked(message: dict[str, Any], large: list[_TooLarge], line: bytes
             ) -> dict[str, Any] | Refusal | None:
    has_id = "id" in message
    given = message.get("id")
    if has_id and not _valid_id(given):
        why = f"the id {given.text} is a number out of the range rein can hold" \
            if isinstance(given, _TooLarge) else \
            f"the id must be a string, a number or null, not {_KINDS[type(given)]}"
        return Refusal(None, INVALID_REQUEST, f"Invalid request: {why}")
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        return Refusal(given, INVALID_REQUEST, "Invalid request: method must be a string")
    if not has_id and method is None:
        return Refusal(None, INVALID_REQUEST, "Invalid request: no method and no id")
    request = method is not None and has_id

    def refused(code: int, why: str) -> Refusal | None:
        return Refusal(given, code, why) if request else None  # never answer the others

    params = message.get("params")
    if method is not None and params is not None and not isinstance(params, dict):
        if not isinstance(params, list):
            return refused(INVALID_REQUEST, "Invalid request: params must be an object")
        return refused(INVALID_PARAMS, "Invalid params: params must be an object, not an "
                                       "array")
    if large:
        return refused(INVALID_PARAMS, f"Invalid params: the number {large[0].text} is out "
                                       "of the range rein can hold")
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and _depth(message) > MAX_DEPTH:
        return refused(INVALID_REQUEST, f"Invalid request: nested deeper than {MAX_DEPTH} "
                                        "levels")
    if _SURROGATE.search(line):  # the id may hold one: it is only echoed, escaped
        lone = "a string holds a lone surrogate (U+D800 to U+DFFF alone is not Unicode text)"
        if not _text(method):
            return refused(INVALID_REQUEST, f"Invalid request: {lone}")
        if not _text({k: v for k, v in message.items() if k not in ("id", "method")}):
            return refused(INVALID_PARAMS, f"Invalid params: {lone}")
    return message


def encode(message: Mapping[str, Any]) -> bytes:
    """``message`` as one line of JSON (UTF-8, newline-terminated). An id echoed with a lone
    surrogate is written escaped (``\\ud800``), as it came. ValueError for a number JSON
    cannot carry (NaN, an infinity): the caller sends an error in its place."""
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
        return (text + "\n").encode("ascii")
