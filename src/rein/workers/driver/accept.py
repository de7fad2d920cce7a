"""Whether an envelope answers its instruction, decided by rein for the schemas rein writes.

Each instruction's ``respond_with`` is a JSON Schema that rein builds from a few keywords
(``type``, ``const``, ``enum``, ``properties``, ``required``, ``additionalProperties``,
``items``, ``minimum``, ``if``/``then``/``else``, and annotations). A driver's submit is a
fresh process, and loading a compiled validator costs it more than a tenth of its
instructions; so :func:`accepts` evaluates exactly those keywords, with JSON Schema 2020-12's
meaning, and answers ``None`` for a schema holding any other keyword (a node's declared
output schema, say), which the validator then decides. It only ever says yes or no where
it is exact: a refusal is explained by the validator in any case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["accepts"]

# Keywords that assert nothing (2020-12 annotations and identifiers).
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default",
                          "examples", "deprecated", "readOnly", "writeOnly"})
_KNOWN = _ANNOTATIONS | {"type", "const", "enum", "properties", "required",
                         "additionalProperties", "items", "minimum", "if", "then", "else"}


class _Unknown(Exception):
    """A keyword (or a value of one) outside what is evaluated here."""


def accepts(schema: Any, instance: Any) -> bool | None:
    """Whether ``instance`` is valid against ``schema``; ``None`` when ``schema`` uses
    anything this does not evaluate."""
    try:
        return _valid(schema, instance, 0)
    except (_Unknown, RecursionError):
        return None


def _valid(schema: Any, instance: Any, depth: int) -> bool:
    if depth > 64:
        raise _Unknown
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, Mapping) or not _KNOWN.issuperset(schema):
        raise _Unknown
    ok = True
    if "type" in schema:
        ok = _typed(schema["type"], instance)
    if ok and "const" in schema:
        ok = _equal(schema["const"], instance)
    if ok and "enum" in schema:
        if not isinstance(schema["enum"], list):
            raise _Unknown
        ok = any(_equal(value, instance) for value in schema["enum"])
    if ok and "minimum" in schema:
        ok = _at_least(schema["minimum"], instance)
    if ok and isinstance(instance, dict):
        ok = _object(schema, instance, depth)
    elif ok and isinstance(instance, list) and "items" in schema:
        ok = all(_valid(schema["items"], item, depth + 1) for item in instance)
    if ok and "if" in schema:
        branch = "then" if _valid(schema["if"], instance, depth + 1) else "else"
        if branch in schema:
            ok = _valid(schema[branch], instance, depth + 1)
    return ok


def _object(schema: Mapping[str, Any], instance: dict[str, Any], depth: int) -> bool:
    required = schema.get("required", [])
    properties = schema.get("properties", {})
    if not isinstance(required, list) or not isinstance(properties, Mapping):
        raise _Unknown
    if any(name not in instance for name in required):
        return False
    for name, value in instance.items():
        if name in properties:
            if not _valid(properties[name], value, depth + 1):
                return False
        elif "additionalProperties" in schema and \
                not _valid(schema["additionalProperties"], value, depth + 1):
            return False
    return True


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _typed(kinds: Any, instance: Any) -> bool:
    if isinstance(kinds, str):
        kinds = [kinds]
    if not isinstance(kinds, list):
        raise _Unknown
    return any(_is(kind, instance) for kind in kinds)


def _is(kind: Any, value: Any) -> bool:
    match kind:
        case "object":
            return isinstance(value, dict)
        case "array":
            return isinstance(value, list)
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case "null":
            return value is None
        case "number":
            return _number(value)
        case "integer":  # 2020-12: any number whose fractional part is zero
            return _number(value) and (isinstance(value, int) or float(value).is_integer())
        case _:
            raise _Unknown


def _at_least(minimum: Any, value: Any) -> bool:
    if not _number(minimum):
        raise _Unknown
    return not _number(value) or value >= minimum


def _kind(value: Any) -> str:
    """The JSON type of ``value`` (numbers are one type)."""
    if isinstance(value, bool):
        return "boolean"
    if _number(value):
        return "number"
    for kind, cls in (("string", str), ("object", dict), ("array", list)):
        if isinstance(value, cls):
            return kind
    if value is None:
        return "null"
    raise _Unknown  # not a JSON value


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (1 equals 1.0), never a boolean for a number."""
    kind = _kind(a)
    if kind != _kind(b):
        return False
    if kind == "object":
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if kind == "array":
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
