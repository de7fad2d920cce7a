"""The syntax tree of an AGX expression, and the parsed forms of expressions and templates.

Every node is immutable and carries ``offset``, the 0-based index in the source text of the
token that starts it (for an operator, the operator itself), so errors found later — by the
validator or at run time — can point at the exact column.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeAlias

_set = object.__setattr__


class _Frozen:
    """An immutable value compared, hashed and shown by its fields, as a frozen dataclass.

    Written out by hand: creating the nine dataclasses of this module cost more at import
    than a small graph's validation spends parsing all its expressions.
    """

    __slots__: ClassVar[tuple[str, ...]] = ()  # a subclass's fields, in order

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _Frozen)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle without __setattr__
        return (_rebuild, (type(self), dict(zip(self.__slots__, self._values(), strict=True))))


def _rebuild(cls: type[Any], fields: dict[str, Any]) -> Any:
    return cls(**fields)


class Literal(_Frozen):
    """A number, string, ``true``, ``false`` or ``null`` written in the source."""

    __slots__ = ("value", "offset")  # noqa: RUF023 - in field order
    value: Any
    offset: int

    def __init__(self, *, value: Any, offset: int) -> None:
        _set(self, "value", value)
        _set(self, "offset", offset)


class ArrayLit(_Frozen):
    """``[a, b, c]``: an array built from expressions."""

    __slots__ = ("items", "offset")
    items: tuple[Node, ...]
    offset: int

    def __init__(self, *, items: tuple[Node, ...], offset: int) -> None:
        _set(self, "items", items)
        _set(self, "offset", offset)


class Reference(_Frozen):
    """A dotted name such as ``nodes.build.outputs.report``: a root name, then members."""

    __slots__ = ("path", "offset")  # noqa: RUF023 - in field order
    path: tuple[str, ...]
    offset: int

    def __init__(self, *, path: tuple[str, ...], offset: int) -> None:
        _set(self, "path", path)
        _set(self, "offset", offset)


class FunctionCall(_Frozen):
    """``name(arg, ...)``; the parser has already checked the name and the arity."""

    __slots__ = ("name", "args", "offset")  # noqa: RUF023 - in field order
    name: str
    args: tuple[Node, ...]
    offset: int

    def __init__(self, *, name: str, args: tuple[Node, ...], offset: int) -> None:
        _set(self, "name", name)
        _set(self, "args", args)
        _set(self, "offset", offset)


class Unary(_Frozen):
    """``-x`` or ``!x`` (``not x`` is spelled ``!`` here)."""

    __slots__ = ("op", "operand", "offset")  # noqa: RUF023 - in field order
    op: str
    operand: Node
    offset: int

    def __init__(self, *, op: str, operand: Node, offset: int) -> None:
        _set(self, "op", op)
        _set(self, "operand", operand)
        _set(self, "offset", offset)


class Binary(_Frozen):
    """An infix operator. ``and``/``or`` are stored as ``&&``/``||``; ``in`` as ``in``."""

    __slots__ = ("op", "left", "right", "offset")  # noqa: RUF023 - in field order
    op: str
    left: Node
    right: Node
    offset: int

    def __init__(self, *, op: str, left: Node, right: Node, offset: int) -> None:
        _set(self, "op", op)
        _set(self, "left", left)
        _set(self, "right", right)
        _set(self, "offset", offset)


Node: TypeAlias = Literal | ArrayLit | Reference | FunctionCall | Unary | Binary


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of ``node``, in source order."""
    match node:
        case Binary():
            return (node.left, node.right)
        case Unary():
            return (node.operand,)
        case FunctionCall():
            return node.args
        case ArrayLit():
            return node.items
        case _:
            return ()


def walk(node: Node) -> list[Node]:
    """Every node under ``node`` (itself included), parents before children, in source order.

    Iterative, so a pathological tree cannot exhaust the interpreter stack.
    """
    out: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(children(current)))
    return out


def depth(node: Node) -> int:
    """The height of the tree under ``node`` (a leaf is 1), computed without recursion."""
    best = 0
    stack = [(node, 1)]
    while stack:
        current, level = stack.pop()
        best = max(best, level)
        stack.extend((child, level + 1) for child in children(current))
    return best


class Expr(_Frozen):
    """A parsed expression: ``source`` is the text as written, ``body`` the root of its tree."""

    __slots__ = ("source", "body")  # noqa: RUF023 - in field order
    source: str
    body: Node

    def __init__(self, *, source: str, body: Node) -> None:
        _set(self, "source", source)
        _set(self, "body", body)

    def __str__(self) -> str:
        return self.source


class Interpolation(_Frozen):
    """One ``${{ expr }}`` inside a template.

    ``offset`` is where ``expr.source`` starts inside the template text, so offsets within
    the expression add to it to give a position in the template.
    """

    __slots__ = ("expr", "offset")
    expr: Expr
    offset: int

    def __init__(self, *, expr: Expr, offset: int) -> None:
        _set(self, "expr", expr)
        _set(self, "offset", offset)


class Template(_Frozen):
    """Literal text with ``${{ expr }}`` interpolations, split into its parts in order."""

    __slots__ = ("source", "parts")  # noqa: RUF023 - in field order
    source: str
    parts: tuple[str | Interpolation, ...]

    def __init__(self, *, source: str, parts: tuple[str | Interpolation, ...]) -> None:
        _set(self, "source", source)
        _set(self, "parts", parts)

    @property
    def interpolations(self) -> tuple[Interpolation, ...]:
        """Only the interpolated parts."""
        return tuple(p for p in self.parts if isinstance(p, Interpolation))

    def __str__(self) -> str:
        return self.source
