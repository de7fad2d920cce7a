"""The fixed set of AGX functions (AGS §16, docs/expressions.md §5): arity and behaviour.

Arguments arrive already evaluated. A wrong argument type raises :class:`Fault`; the evaluator
adds the position. The set is closed: AGS forbids adding functions under a bare name.

Choices the specification leaves open, made here and tested:

* ``int(x)``: numbers truncate toward zero; strings must spell an integer (``"12"``, ``" -3 "``);
  ``true``/``false`` give 1/0; anything else is an error.
* ``float(x)``: numbers; strings spelling a finite decimal number (an exponent is fine in data,
  ``"nan"``/``"inf"`` are not); booleans give 1.0/0.0.
* ``bool(x)``: booleans; numbers (0 is false, anything else true); strings ``"true"``/``"false"``
  in any case. Other strings, null, arrays and objects are errors.
* ``str(x)``: the template rendering (``null`` → ``""``, arrays/objects → compact JSON).
* ``get(obj, path, default)``: ``path`` is split on ``.``; an array step takes a decimal index,
  which is the only way to reach an array element since AGX has no ``a[0]``.
* ``succeeded/failed/skipped(id)`` compare the node's status exactly; an id the scope does not
  know is an error (a typo must not read as "not succeeded").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from rein.formats.agx.errors import Fault
from rein.formats.agx.scope import Scope
from rein.formats.agx.values import (
    describe,
    equal,
    is_array,
    is_number,
    is_object,
    stringify,
    type_name,
)

Impl = Callable[[list[Any], Scope], Any]


def _need(value: Any, check: Callable[[Any], bool], what: str, fn: str, position: str) -> None:
    if not check(value):
        raise Fault(f"{fn}() needs {what} as its {position} argument, got {type_name(value)}")


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _len(args: list[Any], scope: Scope) -> int:
    (x,) = args
    _need(x, lambda v: isinstance(v, str) or is_array(v) or is_object(v),
          "an array, a string or an object", "len", "first")
    return len(x)


def _count(args: list[Any], scope: Scope) -> int:
    (x,) = args
    _need(x, is_array, "an array", "count", "first")
    return len(x)


def contains(haystack: Any, needle: Any, what: str) -> bool:
    """Membership shared by ``contains(a, b)`` and ``b in a``."""
    if isinstance(haystack, str):
        if not isinstance(needle, str):
            raise Fault(f"{what} on a string needs a string to look for, got {type_name(needle)}")
        return needle in haystack
    if is_array(haystack):
        return any(equal(item, needle) for item in haystack)
    if is_object(haystack):
        if not isinstance(needle, str):
            raise Fault(f"{what} on an object needs a string key, got {type_name(needle)}")
        return needle in haystack
    raise Fault(f"{what} needs an array, a string or an object to look in, "
                f"got {type_name(haystack)}")


def _contains(args: list[Any], scope: Scope) -> bool:
    return contains(args[0], args[1], "contains()")


def _string_pair(name: str, op: Callable[[str, str], Any]) -> Impl:
    def impl(args: list[Any], scope: Scope) -> Any:
        _need(args[0], _is_str, "a string", name, "first")
        _need(args[1], _is_str, "a string", name, "second")
        return op(args[0], args[1])
    return impl


def _string_one(name: str, op: Callable[[str], str]) -> Impl:
    def impl(args: list[Any], scope: Scope) -> str:
        _need(args[0], _is_str, "a string", name, "first")
        return op(args[0])
    return impl


def _matches(s: str, pattern: str) -> bool:
    """An unanchored search, in time linear in ``s`` (:mod:`rein.formats.agx.patterns`)."""
    from rein.formats.agx.patterns import PatternError, compile_pattern

    try:
        compiled = compile_pattern(pattern)
    except PatternError as exc:
        raise Fault(f"matches() got {_said(exc)}", kind="pattern", hint=exc.hint) from None
    return compiled.search(s) is not None


def _said(exc: Any) -> str:
    """``an invalid regular expression '(': ...`` or ``a regular expression ... that uses``"""
    return f"an {exc.reason}" if exc.reason.startswith("invalid") else f"a {exc.reason}"


def _split(s: str, sep: str) -> list[str]:
    if sep == "":
        raise Fault("split() needs a non-empty separator")
    return s.split(sep)


def _join(args: list[Any], scope: Scope) -> str:
    items, sep = args
    _need(items, is_array, "an array", "join", "first")
    _need(sep, _is_str, "a string", "join", "second")
    return str.join(sep, (stringify(item) for item in items))


_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")
_FLOAT_TEXT = re.compile(r"\s*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*")


def _int(args: list[Any], scope: Scope) -> int:
    (x,) = args
    if isinstance(x, bool):
        return int(x)
    if is_number(x):
        return int(x)
    if isinstance(x, str) and _INT_TEXT.fullmatch(x):
        try:
            return int(x)
        except ValueError:  # more digits than Python converts
            pass
    raise Fault(f"int() cannot convert {_show(x)}", kind="conversion",
                hint="int() takes a number, a boolean, or a string of digits; "
                     "for \"1.5\" write int(float(x))")


def _float(args: list[Any], scope: Scope) -> float:
    (x,) = args
    if isinstance(x, bool) or is_number(x):
        try:
            return float(x)
        except OverflowError:
            raise Fault("float() got an integer too large for a number",
                        kind="conversion") from None
    if isinstance(x, str) and _FLOAT_TEXT.fullmatch(x):
        value = float(x)
        if value not in (float("inf"), float("-inf")):
            return value
    raise Fault(f"float() cannot convert {_show(x)}", kind="conversion",
                hint="float() takes a number, a boolean, or a string such as \"1.5\"")


def _bool(args: list[Any], scope: Scope) -> bool:
    (x,) = args
    if isinstance(x, bool):
        return x
    if is_number(x):
        return bool(x != 0)
    if isinstance(x, str) and x.strip().lower() in ("true", "false"):
        return x.strip().lower() == "true"
    raise Fault(f"bool() cannot convert {_show(x)}", kind="conversion",
                hint="bool() takes a boolean, a number, or the string \"true\" or \"false\"")


def _str(args: list[Any], scope: Scope) -> str:
    return stringify(args[0])


def _json(args: list[Any], scope: Scope) -> Any:
    (s,) = args
    _need(s, _is_str, "a string", "json", "first")
    try:
        return json.loads(s, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise Fault(f"json() could not parse its argument: {exc.msg} at character {exc.pos}",
                    kind="conversion") from None
    except RecursionError:
        raise Fault("json() input nests too deeply", kind="conversion") from None


def _no_constant(name: str) -> Any:
    raise Fault(f"json() input contains {name}, which is not a JSON number", kind="conversion")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise Fault(f"json() input repeats the key {key!r}", kind="conversion")
        out[key] = value
    return out


def lookup_path(value: Any, path: str) -> tuple[bool, Any]:
    """Walk a dotted path through objects and (by decimal index) arrays: (found, value)."""
    if path == "":
        return True, value
    for step in path.split("."):
        if is_object(value) and step in value:
            value = value[step]
        elif is_array(value) and step.isdecimal() and step.isascii() and int(step) < len(value):
            value = value[int(step)]
        else:
            return False, None
    return True, value


def _get(args: list[Any], scope: Scope) -> Any:
    obj, path = args[0], args[1]
    fallback = args[2] if len(args) == 3 else None
    _need(path, _is_str, "a string path such as \"a.b\"", "get", "second")
    found, value = lookup_path(obj, path)
    return value if found and value is not None else fallback


def _default(args: list[Any], scope: Scope) -> Any:
    return args[1] if args[0] is None else args[0]


def _all_bool(name: str, items: Any) -> list[bool]:
    _need(items, is_array, "an array of booleans", name, "first")
    for index, item in enumerate(items):
        if not isinstance(item, bool):
            raise Fault(f"{name}() needs an array of booleans; element {index} is "
                        f"{type_name(item)}",
                        hint="compare explicitly, e.g. len(x) > 0, to get a boolean")
    return list(items)


def _any(args: list[Any], scope: Scope) -> bool:
    return any(_all_bool("any", args[0]))


def _all(args: list[Any], scope: Scope) -> bool:
    return all(_all_bool("all", args[0]))


def _status_is(name: str, wanted: str) -> Impl:
    def impl(args: list[Any], scope: Scope) -> bool:
        (node_id,) = args
        _need(node_id, _is_str, "a node id string", name, "first")
        status = scope.node_status(node_id)
        if status is None:
            raise Fault(f"{name}() names an unknown node {node_id!r}", kind="name",
                        hint="use the id of a node in the same scope")
        return status == wanted
    return impl


def _output(args: list[Any], scope: Scope) -> Any:
    node_id, name = args
    _need(node_id, _is_str, "a node id string", "output", "first")
    _need(name, _is_str, "an output name string", "output", "second")
    try:
        nodes = scope.lookup("nodes")
    except KeyError:
        nodes = None
    node = nodes.get(node_id) if is_object(nodes) else None
    if node is None:
        if scope.node_status(node_id) is None:
            raise Fault(f"output() names an unknown node {node_id!r}", kind="name",
                        hint="use the id of a node in the same scope")
        return None
    outputs = node.get("outputs") if is_object(node) else None
    return outputs.get(name) if is_object(outputs) else None


def _show(value: Any) -> str:
    return f"{type_name(value)} ({describe(value)})" if value is not None else "null"


_TABLE: dict[str, tuple[int, int, Impl]] = {
    "len": (1, 1, _len),
    "count": (1, 1, _count),
    "contains": (2, 2, _contains),
    "startswith": (2, 2, _string_pair("startswith", lambda s, p: s.startswith(p))),
    "endswith": (2, 2, _string_pair("endswith", lambda s, p: s.endswith(p))),
    "lower": (1, 1, _string_one("lower", str.lower)),
    "upper": (1, 1, _string_one("upper", str.upper)),
    "trim": (1, 1, _string_one("trim", str.strip)),
    "matches": (2, 2, _string_pair("matches", _matches)),
    "split": (2, 2, _string_pair("split", _split)),
    "join": (2, 2, _join),
    "int": (1, 1, _int),
    "float": (1, 1, _float),
    "bool": (1, 1, _bool),
    "str": (1, 1, _str),
    "json": (1, 1, _json),
    "get": (2, 3, _get),
    "default": (2, 2, _default),
    "any": (1, 1, _any),
    "all": (1, 1, _all),
    "succeeded": (1, 1, _status_is("succeeded", "succeeded")),
    "failed": (1, 1, _status_is("failed", "failed")),
    "skipped": (1, 1, _status_is("skipped", "skipped")),
    "output": (2, 2, _output),
}

FUNCTIONS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {name: (low, high) for name, (low, high, _) in _TABLE.items()}
)
"""Every AGX function: name → (minimum arity, maximum arity)."""

IMPLEMENTATIONS: Mapping[str, Impl] = MappingProxyType(
    {name: impl for name, (_, _, impl) in _TABLE.items()}
)

# Names people reach for from other languages, mapped to the AGX spelling.
_ALIASES = {
    "length": "len", "size": "len", "strip": "trim", "includes": "contains", "has": "contains",
    "starts_with": "startswith", "ends_with": "endswith", "lowercase": "lower",
    "uppercase": "upper", "regex": "matches", "match": "matches", "search": "matches",
    "coalesce": "default", "string": "str", "integer": "int", "number": "float",
    "boolean": "bool", "parse_json": "json", "fromjson": "json", "fromJSON": "json",
    "every": "all", "some": "any", "success": "succeeded", "failure": "failed",
}


def suggest(name: str) -> str | None:
    """The function someone probably meant by an unknown ``name``, if one is close."""
    if name in _ALIASES:
        return _ALIASES[name]
    import difflib  # only for an unknown name: every validation would pay for it otherwise

    close = difflib.get_close_matches(name.lower(), list(FUNCTIONS), n=1, cutoff=0.6)
    return close[0] if close else None
