"""Evaluating a parsed expression against the values of a run: a tree-walking interpreter.

There is no host ``eval`` anywhere: the only operations an expression can reach are the ones
spelled out below and the fixed function table. Semantics follow AGS 1.0.1 §16:

* ``==``/``!=`` are deep and total (different JSON types are unequal, ``1 == 1.0``);
* ``< <= > >=`` compare two numbers or two strings, anything else is an error;
* ``+`` adds numbers, concatenates strings or arrays; ``- * / %`` take numbers only and
  ``/``/``%`` by zero is an error (``%`` follows the sign of the divisor, as Python does);
* ``&& || !`` take booleans only and short-circuit; there is no truthiness;
* ``needle in haystack``: array membership, substring, object key;
* reading a member of null, or a missing key, gives null; reading a member of anything
  other than an object or null is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rein.core.frozen import Frozen, field
from rein.formats.agx.errors import AgxEvalError, Fault
from rein.formats.agx.functions import IMPLEMENTATIONS, contains
from rein.formats.agx.scope import Scope
from rein.formats.agx.tree import (
    ArrayLit,
    Binary,
    Expr,
    FunctionCall,
    Literal,
    Node,
    Reference,
    Unary,
)
from rein.formats.agx.values import (
    check_finite,
    describe,
    equal,
    is_number,
    is_object,
    type_name,
)


class MappingScope(Frozen, kw_only=False):
    """A scope over plain data: ``roots`` maps root names to values.

    Node statuses come from ``statuses`` when given, else from ``nodes.<id>.status`` in the
    roots, so a scope built from a run's node table works without extra bookkeeping.
    """

    roots: Mapping[str, Any] = field(default_factory=dict)
    statuses: Mapping[str, str] | None = None

    def lookup(self, root: str) -> Any:
        return self.roots[root]

    def node_status(self, node_id: str) -> str | None:
        if self.statuses is not None:
            return self.statuses.get(node_id)
        nodes = self.roots.get("nodes")
        node = nodes.get(node_id) if isinstance(nodes, Mapping) else None
        status = node.get("status") if isinstance(node, Mapping) else None
        return status if isinstance(status, str) else None


def evaluate(expr: Expr, scope: Scope) -> Any:
    """The value of ``expr`` in ``scope``. Raises AgxEvalError (RT062 family)."""
    return evaluate_at(expr, scope, text=expr.source, base=0)


def evaluate_bool(expr: Expr, scope: Scope) -> bool:
    """The value of a condition (``when``, ``condition``, ``expr``): it must be a boolean."""
    value = evaluate(expr, scope)
    if not isinstance(value, bool):
        raise AgxEvalError(
            f"the condition must give a boolean, got {type_name(value)} ({describe(value)})",
            offset=0, text=expr.source, kind="type",
            hint='compare explicitly, e.g. x == "yes" or len(x) > 0: AGX has no truthiness',
        )
    return value


def evaluate_at(expr: Expr, scope: Scope, *, text: str, base: int) -> Any:
    """Evaluate with positions reported relative to ``text`` (a template holding ``expr`` at
    ``base``), so errors point into the text the author wrote."""
    try:
        return _Evaluator(scope, text, base).eval(expr.body)
    except RecursionError:
        raise AgxEvalError("a value is nested too deeply to evaluate", offset=base,
                           text=text, kind="limit") from None


class _Evaluator:
    __slots__ = ("base", "scope", "text")

    def __init__(self, scope: Scope, text: str, base: int) -> None:
        self.scope = scope
        self.text = text
        self.base = base

    def eval(self, node: Node) -> Any:
        try:
            match node:
                case Literal():
                    return node.value
                case Reference():
                    return self.reference(node)
                case Binary():
                    return self.binary(node)
                case FunctionCall():
                    args = [self.eval(arg) for arg in node.args]
                    return IMPLEMENTATIONS[node.name](args, self.scope)
                case Unary():
                    return _unary(node.op, self.eval(node.operand))
                case ArrayLit():
                    return [self.eval(item) for item in node.items]
        except Fault as fault:
            raise AgxEvalError(fault.message, offset=self.base + node.offset, text=self.text,
                               kind=fault.kind, hint=fault.hint) from None
        raise AssertionError(f"unknown node {node!r}")  # pragma: no cover

    def reference(self, node: Reference) -> Any:
        root = node.path[0]
        try:
            value = self.scope.lookup(root)
        except KeyError:
            raise Fault(f"unknown name '{root}'", kind="name",
                        hint="the name is not visible here; check the spelling and the "
                             "scope rules (AGS §16.5)") from None
        for depth, member in enumerate(node.path[1:], start=1):
            if value is None:
                return None
            if not is_object(value):
                where = ".".join(node.path[:depth])
                raise Fault(f"cannot read '{member}' of {where}, which is {type_name(value)}",
                            hint="only objects have members; check the shape of the value")
            value = value.get(member)
        return value

    def binary(self, node: Binary) -> Any:
        op = node.op
        if op == "&&" or op == "||":
            left = self.eval(node.left)
            if not isinstance(left, bool):
                raise _logic_fault(op, left, "left")
            if (op == "&&") != left:  # false && …, true || … decide without the right side
                return left
            right = self.eval(node.right)
            if not isinstance(right, bool):
                raise _logic_fault(op, right, "right")
            return right
        left = self.eval(node.left)
        right = self.eval(node.right)
        return _BINARY[op](left, right)


def _logic_fault(op: str, value: Any, side: str) -> Fault:
    return Fault(f"'{op}' needs booleans, got {type_name(value)} on the {side}",
                 hint="AGX has no truthiness: compare explicitly, e.g. len(x) > 0")


def _unary(op: str, value: Any) -> Any:
    if op == "!":
        if not isinstance(value, bool):
            raise Fault(f"'!' needs a boolean, got {type_name(value)}",
                        hint="AGX has no truthiness: compare explicitly, e.g. x == null")
        return not value
    if not is_number(value):
        raise Fault(f"'-' needs a number, got {type_name(value)}")
    return -value


def _numbers(op: str, a: Any, b: Any) -> None:
    if not (is_number(a) and is_number(b)):
        raise Fault(f"'{op}' needs two numbers, got {type_name(a)} and {type_name(b)}",
                    hint="convert first with int(x) or float(x) if the value is text")


def _arith(op: str, a: Any, b: Any) -> Any:
    _numbers(op, a, b)
    try:
        if op == "-":
            return check_finite(a - b)
        if op == "*":
            return check_finite(a * b)
        if b == 0:
            raise Fault("division by zero" if op == "/" else "modulo by zero",
                        kind="arithmetic", hint="guard the divisor, e.g. default() or a when")
        return check_finite(a / b if op == "/" else a % b)
    except OverflowError:
        raise Fault("arithmetic overflow: the result is too large for a number",
                    kind="arithmetic") from None


def _add(a: Any, b: Any) -> Any:
    if is_number(a) and is_number(b):
        try:
            return check_finite(a + b)
        except OverflowError:
            raise Fault("arithmetic overflow: the result is too large for a number",
                        kind="arithmetic") from None
    if isinstance(a, str) and isinstance(b, str):
        return a + b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return [*a, *b]
    raise Fault(f"'+' needs two numbers, two strings or two arrays, got {type_name(a)} "
                f"and {type_name(b)}", hint="convert with str(x) to join text to a number")


def _order(op: str, a: Any, b: Any) -> bool:
    both_numbers = is_number(a) and is_number(b)
    if not both_numbers and not (isinstance(a, str) and isinstance(b, str)):
        raise Fault(f"'{op}' compares two numbers or two strings, got {type_name(a)} and "
                    f"{type_name(b)}", hint="convert one side with int(x), float(x) or str(x)")
    # both sides are numbers or both strings (checked above), so each comparison is a bool
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


_BINARY: Mapping[str, Callable[[Any, Any], Any]] = {
    "==": equal,
    "!=": lambda a, b: not equal(a, b),
    "<": lambda a, b: _order("<", a, b),
    "<=": lambda a, b: _order("<=", a, b),
    ">": lambda a, b: _order(">", a, b),
    ">=": lambda a, b: _order(">=", a, b),
    "+": _add,
    "-": lambda a, b: _arith("-", a, b),
    "*": lambda a, b: _arith("*", a, b),
    "/": lambda a, b: _arith("/", a, b),
    "%": lambda a, b: _arith("%", a, b),
    "in": lambda a, b: contains(b, a, "'in'"),
}
