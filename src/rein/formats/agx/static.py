"""Argument types that are wrong already in the source text (AG204 at load time).

AGS: "wrong argument types is AG204 at load time where statically detectable". An argument
is statically known when it is a literal — a string, number, boolean, null or array literal —
so ``len(5)``, ``lower(null)``, ``succeeded(1)`` and ``matches(s, "(")`` fail before a run
starts instead of in the middle of one. Computed arguments are left to run time.
"""

from __future__ import annotations

from rein.formats.agx.tree import ArrayLit, Literal, Node

_STRING = frozenset({"string"})
_WHAT = {
    "string": "a string",
    "array": "an array",
    "container": "an array, a string or an object",
    "node": "a node id string",
}
# name → per argument: (what it needs, the literal kinds that are fine); None = anything.
_ARGS: dict[str, tuple[tuple[str, frozenset[str]] | None, ...]] = {
    "len": (("container", frozenset({"string", "array"})),),
    "count": (("array", frozenset({"array"})),),
    "contains": (("container", frozenset({"string", "array"})), None),
    "startswith": (("string", _STRING), ("string", _STRING)),
    "endswith": (("string", _STRING), ("string", _STRING)),
    "lower": (("string", _STRING),),
    "upper": (("string", _STRING),),
    "trim": (("string", _STRING),),
    "matches": (("string", _STRING), ("string", _STRING)),
    "split": (("string", _STRING), ("string", _STRING)),
    "join": (("array", frozenset({"array"})), ("string", _STRING)),
    "json": (("string", _STRING),),
    "get": (None, ("string", _STRING), None),
    "any": (("array", frozenset({"array"})),),
    "all": (("array", frozenset({"array"})),),
    "succeeded": (("node", _STRING),),
    "failed": (("node", _STRING),),
    "skipped": (("node", _STRING),),
    "output": (("node", _STRING), ("string", _STRING)),
}
_ORDINALS = ("first", "second", "third")


def literal_kind(node: Node) -> str | None:
    """``string``/``number``/``boolean``/``null``/``array`` for a literal, None otherwise."""
    if isinstance(node, ArrayLit):
        return "array"
    if not isinstance(node, Literal):
        return None
    value = node.value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    return "number"


def check_call(name: str, args: tuple[Node, ...]) -> tuple[int, str, str] | None:
    """The first statically wrong argument of a call: (offset, reason, hint), or None."""
    for index, (arg, rule) in enumerate(zip(args, _ARGS.get(name, ()), strict=False)):
        kind = literal_kind(arg)
        if rule is None or kind is None:
            continue
        what, allowed = rule
        if kind not in allowed:
            return (arg.offset,
                    (f"{name}() needs {_WHAT[what]} as its {_ORDINALS[index]} argument, "
                    f"got {_article(kind)}"),
                    "pass a value of the right type; quote text in '...' or \"...\"")
    if name in ("any", "all") and args and isinstance(args[0], ArrayLit):
        for item in args[0].items:
            kind = literal_kind(item)
            if kind is not None and kind != "boolean":
                return (item.offset, (f"{name}() needs an array of booleans, got "
                        f"{_article(kind)} in it"),
                        "put conditions in the array, e.g. [x > 0, y == 1]")
    if name == "matches" and len(args) == 2 and literal_kind(args[1]) == "string":
        # Imported here: most expressions call no matches(), and validating them stays lean.
        from rein.formats.agx.patterns import PatternError, compile_pattern

        pattern = args[1].value  # type: ignore[union-attr]
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            return args[1].offset, exc.reason, exc.hint
    return None


def _article(kind: str) -> str:
    if kind == "null":
        return "null"
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
