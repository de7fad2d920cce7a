"""Properties over generated input: the parser fails only with AgxSyntaxError, arithmetic
agrees with Python's operators, equality agrees with canonical JSON, rendering round-trips."""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rein.formats.agx import (
    AgxEvalError,
    AgxSyntaxError,
    MappingScope,
    evaluate,
    parse,
    parse_template,
    render,
)
from rein.formats.canonical import canonical_json

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

AGX_CHARS = "abnx_.0123456789 \t\n()[],+-*/%<>=!&|\"'\\${}?#e"


@FAST
@given(st.text(alphabet=AGX_CHARS, max_size=40) | st.text(max_size=40))
def test_parse_fails_only_with_syntax_errors(text: str) -> None:
    try:
        expr = parse(text)
    except AgxSyntaxError as err:
        assert 0 <= err.offset <= len(text)
        assert err.code == "AG204"
        assert err.hint
        return
    assert expr.source == text


@FAST
@given(st.text(alphabet=AGX_CHARS, max_size=40).map(lambda s: "x ${{ " + s + " }} y") |
       st.text(alphabet=AGX_CHARS + "${}", max_size=40))
def test_parse_template_fails_only_with_syntax_errors(text: str) -> None:
    try:
        template = parse_template(text)
    except AgxSyntaxError as err:
        assert 0 <= err.offset <= len(text)
        assert err.text == text
        return
    literal = "".join(p for p in template.parts if isinstance(p, str))
    assert len(literal) <= len(text)


# ----------------------------------------------------------------- arithmetic vs Python


@dataclass(frozen=True)
class Num:
    text: str
    value: int | float


@dataclass(frozen=True)
class Neg:
    operand: Any


@dataclass(frozen=True)
class Op:
    op: str
    left: Any
    right: Any


PREC = {"+": 6, "-": 6, "*": 7, "/": 7, "%": 7}
PYTHON = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "%": operator.mod}

numbers = st.one_of(
    st.integers(0, 1000).map(lambda n: Num(str(n), n)),
    st.tuples(st.integers(0, 99), st.integers(0, 99)).map(
        lambda p: Num(f"{p[0]}.{p[1]:02d}", float(f"{p[0]}.{p[1]:02d}"))),
)
trees = st.recursive(
    numbers,
    lambda sub: st.one_of(
        sub.map(Neg),
        st.builds(Op, st.sampled_from(sorted(PREC)), sub, sub),
    ),
    max_leaves=8,
)


def python_value(tree: Any) -> int | float:
    """The oracle: the same operations applied with Python's operators, in tree order."""
    if isinstance(tree, Num):
        return tree.value
    if isinstance(tree, Neg):
        return -python_value(tree.operand)
    return PYTHON[tree.op](python_value(tree.left), python_value(tree.right))


def render_text(tree: Any, spaced: bool) -> str:
    """Source text with only the parentheses precedence and left-associativity need."""
    if isinstance(tree, Num):
        return tree.text
    if isinstance(tree, Neg):
        inner = render_text(tree.operand, spaced)
        return f"-({inner})" if isinstance(tree.operand, Op) else f"-{inner}"
    left = render_text(tree.left, spaced)
    right = render_text(tree.right, spaced)
    if isinstance(tree.left, Op) and PREC[tree.left.op] < PREC[tree.op]:
        left = f"({left})"
    if isinstance(tree.right, Op) and PREC[tree.right.op] <= PREC[tree.op]:
        right = f"({right})"
    gap = " " if spaced else ""  # "1-1" must be subtraction too
    return f"{left}{gap}{tree.op}{gap}{right}"


@FAST
@given(trees, st.booleans())
def test_arithmetic_matches_python(tree: Any, spaced: bool) -> None:
    text = render_text(tree, spaced)
    try:
        expected = python_value(tree)
    except ZeroDivisionError:
        try:
            evaluate(parse(text), MappingScope())
        except AgxEvalError as err:
            assert err.kind == "arithmetic"
            return
        raise AssertionError(f"{text} should divide by zero") from None
    got = evaluate(parse(text), MappingScope())
    assert got == expected
    assert type(got) is type(expected)


# ----------------------------------------------------------------- equality vs canonical JSON

scalars = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=5) | \
    st.floats(allow_nan=False, allow_infinity=False, width=32)
json_values = st.recursive(
    scalars,
    lambda sub: st.lists(sub, max_size=3) | st.dictionaries(st.text(max_size=3), sub, max_size=3),
    max_leaves=10,
)


def floatify(value: Any) -> Any:
    """The same JSON value with integers written as floats (``1`` → ``1.0``)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, list):
        return [floatify(v) for v in value]
    if isinstance(value, dict):
        return {k: floatify(v) for k, v in value.items()}
    return value


@FAST
@given(json_values, json_values, st.integers(0, 2))
def test_equality_agrees_with_canonical_json(a: Any, other: Any, pick: int) -> None:
    b = [a, floatify(a), other][pick]
    scope = MappingScope({"a": a, "b": b})
    same = canonical_json(a) == canonical_json(b)
    assert evaluate(parse("a == b"), scope) is same
    assert evaluate(parse("a != b"), scope) is (not same)
    assert evaluate(parse("[a] == [b]"), scope) is same


@FAST
@given(json_values)
def test_rendering_round_trips_through_json(value: Any) -> None:
    text = render(parse_template("${{ v }}"), MappingScope({"v": value}))
    if value is None:
        assert text == ""
    elif isinstance(value, str):
        assert text == value
    else:
        assert canonical_json(json.loads(text)) == canonical_json(value)
