"""What an expression or template reads: its reference chains and its function calls.

The validator uses these for the static checks (AG201–AG206): every ``nodes.X.outputs.Y``,
``params.N`` or ``loop.index`` is a :class:`Ref`; every ``output("id", "name")`` or
``succeeded("id")`` is a :class:`Call` whose literal arguments are available as values.
Offsets are 0-based indexes into the expression's text, or into the template's text for a
template.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, final

from rein.core.frozen import Frozen
from rein.formats.agx.tree import Expr, FunctionCall, Literal, Reference, Template, walk


@final  # one instance, never subclassed
class _NotLiteral:
    """The type of :data:`NOT_LITERAL`."""

    __slots__ = ()
    _instance: _NotLiteral | None = None

    def __new__(cls) -> _NotLiteral:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_LITERAL"

    def __reduce__(self) -> str:
        return "NOT_LITERAL"


NOT_LITERAL: Final = _NotLiteral()
"""Stands in a :class:`Call`'s ``args`` for an argument that is not a scalar literal."""


class Ref(Frozen):
    """One reference chain, e.g. ``nodes.build.outputs.report`` →
    ``("nodes", "build", "outputs", "report")``; ``offset`` is where its first name starts."""

    path: tuple[str, ...]
    offset: int

    @property
    def root(self) -> str:
        """The first name of the chain."""
        return self.path[0]

    def __str__(self) -> str:
        return ".".join(self.path)


class Call(Frozen):
    """One function call. ``args`` holds each argument's value when it is a string, number,
    boolean or null literal (``-1`` included), else :data:`NOT_LITERAL`."""

    name: str
    args: tuple[object, ...]
    offset: int


def references(source: Expr | Template) -> list[Ref]:
    """Every reference chain in an expression or template, in source order."""
    return [
        Ref(path=node.path, offset=base + node.offset)
        for base, node in _nodes(source)
        if isinstance(node, Reference)
    ]


def calls(source: Expr | Template) -> list[Call]:
    """Every function call in an expression or template, in source order (an outer call
    comes before the calls in its arguments)."""
    return [
        Call(
            name=node.name,
            args=tuple(a.value if isinstance(a, Literal) else NOT_LITERAL for a in node.args),
            offset=base + node.offset,
        )
        for base, node in _nodes(source)
        if isinstance(node, FunctionCall)
    ]


def _nodes(source: Expr | Template) -> Iterator[tuple[int, object]]:
    if isinstance(source, Expr):
        for node in walk(source.body):
            yield 0, node
    elif isinstance(source, Template):
        for part in source.interpolations:
            for node in walk(part.expr.body):
                yield part.offset, node
    else:
        raise TypeError(f"expected a parsed Expr or Template, not {type(source).__name__}")
