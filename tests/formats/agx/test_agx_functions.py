"""Every AGX function: results, and the errors for wrong argument types or failed
conversions."""

from __future__ import annotations

from typing import Any

import pytest

from rein.formats.agx import (
    FUNCTIONS,
    AgxEvalError,
    AgxSyntaxError,
    MappingScope,
    evaluate,
    parse,
)

SCOPE = MappingScope(
    {
        "obj": {"a": {"b": [10, {"c": "deep"}]}, "n": None, "k": 1},
        "nodes": {
            "build": {"status": "succeeded", "outputs": {"report": "ok"}},
            "lint": {"status": "failed"},
            "docs": {"status": "skipped", "outputs": {"page": None}},
        },
        "text": "Hello, World",
        # values reached through a name, so the wrong types meet the run-time checks
        # rather than the load-time ones (see test_wrong_literal_arguments_fail_to_parse)
        "v": {"five": 5, "one": 1, "nul": None, "abc": "abc", "empty": [], "mixed": [True, 1],
              "nulls": [None], "paren": "("},
    },
    statuses={"build": "succeeded", "lint": "failed", "docs": "skipped", "later": "pending"},
)


def ev(text: str) -> Any:
    return evaluate(parse(text), SCOPE)


def test_function_table_is_the_specified_set() -> None:
    assert dict(FUNCTIONS) == {
        "len": (1, 1), "count": (1, 1), "contains": (2, 2), "startswith": (2, 2),
        "endswith": (2, 2), "lower": (1, 1), "upper": (1, 1), "trim": (1, 1),
        "matches": (2, 2), "split": (2, 2), "join": (2, 2), "int": (1, 1), "float": (1, 1),
        "bool": (1, 1), "str": (1, 1), "json": (1, 1), "get": (2, 3), "default": (2, 2),
        "any": (1, 1), "all": (1, 1), "succeeded": (1, 1), "failed": (1, 1),
        "skipped": (1, 1), "output": (2, 2),
    }
    with pytest.raises(TypeError):
        FUNCTIONS["now"] = (0, 0)  # type: ignore[index]


RESULTS = [
    ("len([1, 2, 3])", 3), ("len('héllo')", 5), ("len(obj)", 3), ("len([])", 0), ("len('')", 0),
    ("count([1, null])", 2),
    ("contains('abc', 'b')", True), ("contains('abc', 'd')", False),
    ("contains([1, 2], 2.0)", True), ("contains([1], true)", False),
    ("contains(obj, 'k')", True), ("contains(obj, 'z')", False),
    ("startswith(text, 'Hell')", True), ("startswith(text, 'World')", False),
    ("endswith(text, 'World')", True), ("endswith('', '')", True),
    ("lower(text)", "hello, world"), ("upper('abc')", "ABC"), ("trim('  a b \n')", "a b"),
    ("matches(text, 'o, W')", True),  # unanchored search
    ("matches(text, '^World')", False), ("matches(text, '^H.*d$')", True),
    ("matches('v1.2.3', '[0-9]+\\\\.[0-9]+')", True),
    ("split('a,b,,c', ',')", ["a", "b", "", "c"]), ("split('abc', ',')", ["abc"]),
    ("join(['a', 'b'], '-')", "a-b"), ("join([1, 2.5, 2.0, true, null, [1], 'x'], ',')",
                                       "1,2.5,2,true,,[1],x"),
    ("join([], ',')", ""),
    ("int('42')", 42), ("int(' -7 ')", -7), ("int(3.9)", 3), ("int(-3.9)", -3), ("int(true)", 1),
    ("int(5)", 5),
    ("float('1.5')", 1.5), ("float('2')", 2.0), ("float(' -1e3 ')", -1000.0), ("float(3)", 3.0),
    ("float(false)", 0.0), ("float('.5')", 0.5),
    ("bool(true)", True), ("bool(0)", False), ("bool(0.5)", True), ("bool('TRUE')", True),
    ("bool(' false ')", False),
    ("str(1)", "1"), ("str(1.5)", "1.5"), ("str(2.0)", "2"), ("str(true)", "true"),
    ("str(null)", ""), ("str('x')", "x"), ("str([1, 'a'])", '[1,"a"]'),
    ("str(obj.a)", '{"b":[10,{"c":"deep"}]}'), ("str(0.1 + 0.2)", "0.30000000000000004"),
    ("json('{\"a\": [1, null]}')", {"a": [1, None]}), ("json('3')", 3), ("json('\"s\"')", "s"),
    ("json('null')", None),
    ("get(obj, 'a.b.1.c')", "deep"), ("get(obj, 'a.b.0')", 10), ("get(obj, 'a.x', 'd')", "d"),
    ("get(obj, 'a.b.9', 'd')", "d"), ("get(obj, 'a.b.c')", None), ("get(obj, 'n', 7)", 7),
    ("get(obj, 'k', 7)", 1), ("get(null, 'a', 1)", 1), ("get('str', 'a')", None),
    ("get(obj, '')", {"a": {"b": [10, {"c": "deep"}]}, "n": None, "k": 1}),
    ("get([[1, 2]], '0.1')", 2),
    ("default(null, 1)", 1), ("default(0, 1)", 0), ("default(false, true)", False),
    ("default(nodes.docs.outputs.page, 'none')", "none"),
    ("default(nodes.lint.outputs.x, 'none')", "none"),
    ("any([false, true])", True), ("any([])", False), ("all([true, true])", True),
    ("all([])", True), ("all([true, false])", False),
    ("succeeded('build')", True), ("failed('build')", False), ("failed('lint')", True),
    ("skipped('docs')", True), ("succeeded('later')", False),
    ("output('build', 'report')", "ok"), ("output('build', 'nope')", None),
    ("output('lint', 'x')", None), ("output('later', 'x')", None),
]


@pytest.mark.parametrize(("text", "value"), RESULTS)
def test_results(text: str, value: Any) -> None:
    result = ev(text)
    assert result == value
    assert type(result) is type(value)


ERRORS = [
    ("len(v.five)",
     "len() needs an array, a string or an object as its first argument, got a number",
     "type"),
    ("len(v.nul)", "len() needs an array, a string or an object as its first argument, got null",
     "type"),
    ("count(v.abc)", "count() needs an array as its first argument, got a string", "type"),
    ("contains(v.abc, v.one)", "contains() on a string needs a string to look for, got a number",
     "type"),
    ("contains(obj, 1)", "contains() on an object needs a string key, got a number", "type"),
    ("contains(v.one, 1)",
     "contains() needs an array, a string or an object to look in, got a number", "type"),
    ("startswith(v.one, 'a')", "startswith() needs a string as its first argument, got a number",
     "type"),
    ("endswith('a', v.nul)", "endswith() needs a string as its second argument, got null", "type"),
    ("lower(v.one)", "lower() needs a string as its first argument, got a number", "type"),
    ("upper(v.empty)", "upper() needs a string as its first argument, got an array", "type"),
    ("trim(v.nul)", "trim() needs a string as its first argument, got null", "type"),
    ("matches('a', v.paren)",
     ("matches() got an invalid regular expression '(': missing ), unterminated subpattern at "
      "position 0"), "pattern"),
    ("matches(v.one, 'a')", "matches() needs a string as its first argument, got a number", "type"),
    ("split('a', '')", "split() needs a non-empty separator", "type"),
    ("split(v.one, ',')", "split() needs a string as its first argument, got a number", "type"),
    ("join(v.abc, ',')", "join() needs an array as its first argument, got a string", "type"),
    ("join([1], v.one)", "join() needs a string as its second argument, got a number", "type"),
    ("int('1.5')", 'int() cannot convert a string ("1.5")', "conversion"),
    ("int('abc')", 'int() cannot convert a string ("abc")', "conversion"),
    ("int(null)", "int() cannot convert null", "conversion"),
    ("int([1])", "int() cannot convert an array ([1])", "conversion"),
    ("int('" + "9" * 5000 + "')", 'int() cannot convert a string ("' + "9" * 38 + '…)',
     "conversion"),
    ("float('nan')", 'float() cannot convert a string ("nan")', "conversion"),
    ("float('inf')", 'float() cannot convert a string ("inf")', "conversion"),
    ("float('1e999')", 'float() cannot convert a string ("1e999")', "conversion"),
    ("float('')", 'float() cannot convert a string ("")', "conversion"),
    ("float(json('{}'))", "float() cannot convert an object ({})", "conversion"),
    ("bool('yes')", 'bool() cannot convert a string ("yes")', "conversion"),
    ("bool(null)", "bool() cannot convert null", "conversion"),
    ("bool([])", "bool() cannot convert an array ([])", "conversion"),
    ("json('{bad')",
     ("json() could not parse its argument: Expecting property name enclosed in double quotes "
      "at character 1"), "conversion"),
    ("json('NaN')", "json() input contains NaN, which is not a JSON number", "conversion"),
    ("json('{\"a\": 1, \"a\": 2}')", "json() input repeats the key 'a'", "conversion"),
    ("json('" + "[" * 100000 + "')", "json() input nests too deeply", "conversion"),
    ("json(v.one)", "json() needs a string as its first argument, got a number", "type"),
    ("get(obj, v.one)",
     'get() needs a string path such as "a.b" as its second argument, got a number', "type"),
    ("any(v.mixed)",
     "any() needs an array of booleans; element 1 is a number", "type"),
    ("all(v.abc)", "all() needs an array of booleans as its first argument, got a string", "type"),
    ("all(v.nulls)", "all() needs an array of booleans; element 0 is null", "type"),
    ("succeeded('nope')", "succeeded() names an unknown node 'nope'", "name"),
    ("failed(v.one)", "failed() needs a node id string as its first argument, got a number",
     "type"),
    ("skipped(v.nul)", "skipped() needs a node id string as its first argument, got null", "type"),
    ("output('nope', 'x')", "output() names an unknown node 'nope'", "name"),
    ("output('build', v.one)", ("output() needs an output name string as its second argument, "
                                "got a number"), "type"),
]


@pytest.mark.parametrize(("text", "reason", "kind"), ERRORS)
def test_errors(text: str, reason: str, kind: str) -> None:
    with pytest.raises(AgxEvalError) as caught:
        ev(text)
    assert caught.value.reason == reason
    assert caught.value.kind == kind
    assert caught.value.offset == 0  # the call itself


def test_error_inside_an_argument_points_at_the_argument() -> None:
    with pytest.raises(AgxEvalError) as caught:
        ev("len(lower(v.one))")
    assert caught.value.offset == 4
    assert caught.value.reason == "lower() needs a string as its first argument, got a number"


STATIC_ERRORS = [
    ("len(5)", "len() needs an array, a string or an object as its first argument, got a number",
     4),
    ("len(null)", "len() needs an array, a string or an object as its first argument, got null",
     4),
    ("count('abc')", "count() needs an array as its first argument, got a string", 6),
    ("contains(1, 1)",
     "contains() needs an array, a string or an object as its first argument, got a number", 9),
    ("x && startswith(1, 'a')", ("startswith() needs a string as its first argument, "
                                 "got a number"), 16),
    ("endswith('a', null)", "endswith() needs a string as its second argument, got null", 14),
    ("lower(true)", "lower() needs a string as its first argument, got a boolean", 6),
    ("upper([])", "upper() needs a string as its first argument, got an array", 6),
    ("split(x, 1)", "split() needs a string as its second argument, got a number", 9),
    ("join('ab', ',')", "join() needs an array as its first argument, got a string", 5),
    ("json(1)", "json() needs a string as its first argument, got a number", 5),
    ("get(obj, 1)", "get() needs a string as its second argument, got a number", 9),
    ("any([true, 1])", "any() needs an array of booleans, got a number in it", 11),
    ("all('ab')", "all() needs an array as its first argument, got a string", 4),
    ("failed(1)", "failed() needs a node id string as its first argument, got a number", 7),
    ("output('a', null)", "output() needs a string as its second argument, got null", 12),
    ("matches(s, '(')",
     "invalid regular expression '(': missing ), unterminated subpattern at position 0", 11),
]


@pytest.mark.parametrize(("text", "reason", "offset"), STATIC_ERRORS)
def test_wrong_literal_arguments_fail_to_parse(text: str, reason: str, offset: int) -> None:
    with pytest.raises(AgxSyntaxError) as caught:
        parse(text)
    assert caught.value.reason == reason
    assert caught.value.offset == offset
    assert caught.value.code == "AG204"


@pytest.mark.parametrize("text", [
    "len(x)", "len('abc')", "len([1])", "contains('abc', 1)", "get(1, 'a')", "default(1, 'x')",
    "int('abc')", "str(null)", "any([x, true])", "matches(s, '[a-z]+')", "output(x, 'y')",
])
def test_computed_or_well_typed_arguments_parse(text: str) -> None:
    parse(text)  # contains('abc', 1) fails only at run time: the needle is checked there


def test_every_function_has_a_result_and_an_error_case() -> None:
    tried = {parse(text).body.name for text, _ in RESULTS}  # type: ignore[union-attr]
    failed = {parse(text).body.name for text, _, _ in ERRORS}  # type: ignore[union-attr]
    assert tried == set(FUNCTIONS)
    # ``default`` and ``str`` accept any value, so only they have no error case.
    assert set(FUNCTIONS) - failed == {"default", "str"}
