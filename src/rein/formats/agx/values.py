"""AGX values are JSON values. This module names their types, compares them, and turns them
into text the way templates and ``str()``/``join()`` do.

Python's own ``==`` is not enough: it says ``True == 1`` and ``[True] == [1]``, while AGX keeps
booleans and numbers apart at every depth.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, TypeGuard

from rein.formats.agx.errors import Fault


def is_number(value: Any) -> bool:
    """An int or float that is not a bool (booleans are not numbers in AGX)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_array(value: Any) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    return isinstance(value, (list, tuple))


def is_object(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping)


def type_name(value: Any) -> str:
    """The JSON type of ``value`` with an article, for messages: "a string", "null", …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if is_array(value):
        return "an array"
    if is_object(value):
        return "an object"
    return f"a non-JSON value ({type(value).__name__})"


def equal(a: Any, b: Any) -> bool:
    """Deep, total JSON equality: different JSON types are unequal, ``1 == 1.0``."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) or is_number(b):
        return is_number(a) and is_number(b) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if is_array(a) or is_array(b):
        return (is_array(a) and is_array(b) and len(a) == len(b)
                and all(equal(x, y) for x, y in zip(a, b, strict=True)))
    if is_object(a) and is_object(b):
        return len(a) == len(b) and all(k in b and equal(v, b[k]) for k, v in a.items())
    return False


def format_number(value: float) -> str:
    """Numbers as JSON writes them: ``2.0`` → ``2`` (JSON has one number type)."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return repr(value)
    return str(value)


def stringify(value: Any) -> str:
    """Text for a value: scalars as themselves, ``null`` as "", arrays/objects as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_number(value):
        return format_number(value)
    if is_array(value) or is_object(value):
        return json.dumps(to_json(value), separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
    raise Fault(f"cannot turn {type_name(value)} into text")


def to_json(value: Any) -> Any:
    """A plain JSON copy (tuples → lists, mappings → dicts), refusing anything else."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if is_number(value):
        if isinstance(value, float) and not math.isfinite(value):
            raise Fault("a non-finite number is not a JSON value", kind="arithmetic")
        return value
    if is_array(value):
        return [to_json(v) for v in value]
    if is_object(value):
        return {str(k): to_json(v) for k, v in value.items()}
    raise Fault(f"{type_name(value)} is not a JSON value")


def check_finite(value: float) -> int | float:
    """Arithmetic must stay inside JSON: an overflow to infinity is an error, not a value."""
    if isinstance(value, float) and not math.isfinite(value):
        raise Fault("arithmetic overflow: the result is too large for a number",
                    kind="arithmetic")
    return value


def describe(value: Any, limit: int = 40) -> str:
    """A short rendering of a value for error messages."""
    try:
        text = json.dumps(to_json(value), ensure_ascii=False)
    except (Fault, TypeError, ValueError, RecursionError):
        text = type_name(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
