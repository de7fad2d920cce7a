"""Every AGX function: results, and the errors for wrong argument types or failed
conversions."""

from __future__ import annotations

from typing import Any

import pytest

from rein.formats.agx import FUNCTIONS, AgxEvalError, MappingScope, evaluate, parse

SCOPE = MappingScope(
    {
        "obj": {"a": {"b": [10, {"c": "deep"}]}, "n": None, "k": 1},
        "nodes": {
            "build": {"status": "succeeded", "outputs": {"report": "ok"}},
            "lint": {"status": "failed"},
            "docs": {"status": "skipped", "outputs": {"page": None}},
        },
        "text": "Hello, World",
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
    ("len(5)", "len() needs an array, a string or an object as its first argument, got a number",
     "type"),
    ("len(null)", "len() needs an array, a string or an object as its first argument, got null",
     "type"),
    ("count('abc')", "count() needs an array as its first argument, got a string", "type"),
    ("contains('abc', 1)", "contains() on a string needs a string to look for, got a number",
     "type"),
    ("contains(obj, 1)", "contains() on an object needs a string key, got a number", "type"),
    ("contains(1, 1)",
     "contains() needs an array, a string or an object to look in, got a number", "type"),
    ("startswith(1, 'a')", "startswith() needs a string as its first argument, got a number",
     "type"),
    ("endswith('a', null)", "endswith() needs a string as its second argument, got null", "type"),
    ("lower(1)", "lower() needs a string as its first argument, got a number", "type"),
    ("upper([])", "upper() needs a string as its first argument, got an array", "type"),
    ("trim(null)", "trim() needs a string as its first argument, got null", "type"),
    ("matches('a', '(')",
     "matches() got an invalid regular expression '(': missing ), unterminated subpattern at "
     "position 0", "pattern"),
    ("matches(1, 'a')", "matches() needs a string as its first argument, got a number", "type"),
    ("split('a', '')", "split() needs a non-empty separator", "type"),
    ("split(1, ',')", "split() needs a string as its first argument, got a number", "type"),
    ("join('ab', ',')", "join() needs an array as its first argument, got a string", "type"),
    ("join([1], 1)", "join() needs a string as its second argument, got a number", "type"),
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
     "json() could not parse its argument: Expecting property name enclosed in double quotes "
     "at character 1", "conversion"),
    ("json('NaN')", "json() input contains NaN, which is not a JSON number", "conversion"),
    ("json('{\"a\": 1, \"a\": 2}')", "json() input repeats the key 'a'", "conversion"),
    ("json('" + "[" * 100000 + "')", "json() input nests too deeply", "conversion"),
    ("json(1)", "json() needs a string as its first argument, got a number", "type"),
    ("get(obj, 1)",
     'get() needs a string path such as "a.b" as its second argument, got a number', "type"),
    ("any([true, 1])",
     "any() needs an array of booleans; element 1 is a number", "type"),
    ("all('ab')", "all() needs an array of booleans as its first argument, got a string", "type"),
    ("all([null])", "all() needs an array of booleans; element 0 is null", "type"),
    ("succeeded('nope')", "succeeded() names an unknown node 'nope'", "name"),
    ("failed(1)", "failed() needs a node id string as its first argument, got a number", "type"),
    ("skipped(null)", "skipped() needs a node id string as its first argument, got null", "type"),
    ("output('nope', 'x')", "output() names an unknown node 'nope'", "name"),
    ("output('build', 1)", "output() needs an output name string as its second argument, "
     "got a number", "type"),
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
        ev("len(lower(1))")
    assert caught.value.offset == 4
    assert caught.value.reason == "lower() needs a string as its first argument, got a number"


def test_every_function_has_a_result_and_an_error_case() -> None:
    tried = {parse(text).body.name for text, _ in RESULTS}  # type: ignore[union-attr]
    failed = {parse(text).body.name for text, _, _ in ERRORS}  # type: ignore[union-attr]
    assert tried == set(FUNCTIONS)
    # ``default`` and ``str`` accept any value, so only they have no error case.
    assert set(FUNCTIONS) - failed == {"default", "str"}
