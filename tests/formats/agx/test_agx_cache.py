"""The parse cache: one tree per distinct source text, never a tree for another text."""

from __future__ import annotations

import copy
import pickle

import pytest

from rein.formats.agx import AgxSyntaxError, parse, parse_template
from rein.formats.agx.parser import _parse_cached, _Parser

# Pairs that differ only a little: spacing moves offsets, quotes and literals change values.
NEAR = [
    ("a == 1", "a == 1.0"),
    ("a == 1", "a  == 1"),
    ('a == "x"', "a == 'x'"),
    ("nodes.b.outputs.c", "nodes.b.outputs.d"),
    ("len(x) > 10", "len(x) >= 10"),
    ("!a && b", "!(a && b)"),
    ("[1, 2]", "[2, 1]"),
]


@pytest.mark.parametrize(("one", "other"), NEAR)
def test_the_same_text_gives_the_same_tree_and_another_text_another(one: str,
                                                                    other: str) -> None:
    first = parse(one)
    assert parse(one) is first  # served from the cache
    assert parse("".join(one)) is first  # an equal string, not the same object
    fresh = _Parser(one).parse()  # the tree built again without the cache
    assert first.body == fresh and hash(first.body) == hash(fresh)
    second = parse(other)
    assert second is not first and second != first
    assert second.source == other
    assert second.body == _Parser(other).parse()


def test_equal_values_of_other_types_stay_apart() -> None:
    # 1 == 1.0 and hash(1) == hash(1.0) in Python: a cache keyed by anything but the text
    # could hand back the integer for the decimal
    assert type(parse("a == 1").body.right.value) is int  # type: ignore[union-attr]
    assert type(parse("a == 1.0").body.right.value) is float  # type: ignore[union-attr]
    assert type(parse("a == 1").body.right.value) is int  # type: ignore[union-attr]


def test_a_cached_tree_is_immutable_and_copies_equal() -> None:
    expr = parse("default(nodes.a.outputs.x, 'none') == 'none'")
    with pytest.raises(AttributeError):
        expr.body.op = "!="  # type: ignore[union-attr]
    again = parse("default(nodes.a.outputs.x, 'none') == 'none'")
    assert again.body.op == "=="  # type: ignore[union-attr]
    assert copy.deepcopy(expr) == expr
    assert pickle.loads(pickle.dumps(expr)) == expr


def test_bad_syntax_is_not_cached_as_a_tree() -> None:
    _parse_cached.cache_clear()
    for _ in range(2):
        with pytest.raises(AgxSyntaxError):
            parse("a ==")
    assert _parse_cached.cache_info().currsize == 0


def test_templates_are_cached_by_text_too() -> None:
    one = parse_template("Hello ${{ params.name }}!")
    assert parse_template("Hello ${{ params.name }}!") is one
    other = parse_template("Hello ${{ params.names }}!")
    assert other != one
    assert other.interpolations[0].expr.source.strip() == "params.names"
