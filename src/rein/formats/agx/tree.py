"""The syntax tree of an AGX expression, and the parsed forms of expressions and templates.

Every node is immutable and carries ``offset``, the 0-based index in the source text of the
token that starts it (for an operator, the operator itself), so errors found later — by the
validator or at run time — can point at the exact column.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from rein.core.frozen import Frozen


class Literal(Frozen):
    """A number, string, ``true``, ``false`` or ``null`` written in the source."""

    value: Any
    offset: int


class ArrayLit(Frozen):
    """``[a, b, c]``: an array built from expressions."""

    items: tuple[Node, ...]
    offset: int


class Reference(Frozen):
    """A dotted name such as ``nodes.build.outputs.report``: a root name, then members."""

    path: tuple[str, ...]
    offset: int


class FunctionCall(Frozen):
    """``name(arg, ...)``; the parser has already checked the name and the arity."""

    name: str
    args: tuple[Node, ...]
    offset: int


class Unary(Frozen):
    """``-x`` or ``!x`` (``not x`` is spelled ``!`` here)."""

    op: str
    operand: Node
    offset: int


class Binary(Frozen):
    """An infix operator. ``and``/``or`` are stored as ``&&``/``||``; ``in`` as ``in``."""

    op: str
    left: Node
    right: Node
    offset: int


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


class Expr(Frozen):
    """A parsed expression: ``source`` is the text as written, ``body`` the root of its tree."""

    source: str
    body: Node

    def __str__(self) -> str:
        return self.source


class Interpolation(Frozen):
    """One ``${{ expr }}`` inside a template.

    ``offset`` is where ``expr.source`` starts inside the template text, so offsets within
    the expression add to it to give a position in the template.
    """

    expr: Expr
    offset: int


class Template(Frozen):
    """Literal text with ``${{ expr }}`` interpolations, split into its parts in order."""

    source: str
    parts: tuple[str | Interpolation, ...]

    @property
    def interpolations(self) -> tuple[Interpolation, ...]:
        """Only the interpolated parts."""
        return tuple(p for p in self.parts if isinstance(p, Interpolation))

    def __str__(self) -> str:
        return self.source
