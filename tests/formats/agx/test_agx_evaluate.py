"""Evaluation: every operator with its typing rules, references, and run-time errors."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from rein.formats.agx import AgxEvalError, MappingScope, evaluate, evaluate_bool, parse

SCOPE = MappingScope({
    "params": {"n": 5, "name": "rein", "tags": ["a", "b"], "ratio": 0.5, "empty": None},
    "context": {"limits": {"max": 10}, "flag": True},
    "nodes": {
        "build": {"status": "succeeded", "outputs": {"report": "ok", "count": 3, "items": [1, 2]}},
        "lint": {"status": "skipped", "outputs": {}},
    },
    "page": "index.md",
    "index": 2,
})


def ev(text: str, scope: Any = SCOPE) -> Any:
    return evaluate(parse(text), scope)


VALUES = [
    # arithmetic
    ("1 + 2", 3), ("1.5 + 1", 2.5), ("10 - 4 - 3", 3), ("2 * 3.5", 7.0), ("7 / 2", 3.5),
    ("6 / 3", 2.0), ("7 % 3", 1), ("-7 % 3", 2), ("7 % -3", -2), ("5.5 % 2", 1.5),
    ("-params.n", -5), ("- -3", 3), ("1-1", 0), ("params.n -1", 4), ("len(params.tags)-1", 1),
    ("2 + 3 * 4 - 6 / 2", 11.0), ("(2 + 3) * 4", 20),
    ("99999999999999999999 * 99999999999999999999", 9999999999999999999800000000000000000001),
    # strings and arrays with +
    ('"ab" + "cd"', "abcd"), ("params.name + '!'", "rein!"), ("[1] + [2, 3]", [1, 2, 3]),
    ("params.tags + []", ["a", "b"]), ("[] + []", []),
    # equality: deep and total
    ("1 == 1.0", True), ("1 == 1", True), ("1 != 2", True), ('"a" == "a"', True),
    ("true == 1", False), ("false == 0", False), ("null == false", False), ("null == null", True),
    ('1 == "1"', False), ("[1, 2] == [1, 2]", True), ("[1, 2] == [2, 1]", False),
    ("[true] == [1]", False), ("[1] == [1.0]", True), ("[] == null", False),
    ("context.limits == context.limits", True), ("params.empty == null", True),
    ('json("{\\"a\\": [1, {\\"b\\": true}]}") == json("{\\"a\\": [1, {\\"b\\": true}]}")', True),
    ('json("{\\"a\\": 1}") == json("{\\"a\\": 1, \\"b\\": 2}")', False),
    ('json("{\\"a\\": 1}") == json("{\\"b\\": 1}")', False),
    ('json("{\\"a\\": true}") == json("{\\"a\\": 1}")', False),
    ("1 != true", True), ('"x" != null', True),
    # ordering
    ("1 < 2", True), ("2 <= 2", True), ("3 > 2.5", True), ("2 >= 3", False),
    ('"a" < "b"', True), ('"B" < "a"', True), ('"abc" >= "abd"', False), ('"" < "a"', True),
    # logic, both spellings, short-circuit
    ("true && false", False), ("true and true", True), ("false || true", True),
    ("false or false", False), ("!true", False), ("not false", True),
    ("false && 1", False), ("true || 1", True),  # right side never evaluated
    ("false && missing_name", False), ("true || 1 / 0 == 1", True),
    ("context.flag && params.n > 3", True),
    # in
    ('"a" in params.tags', True), ('"z" in params.tags', False), ("2 in [1, 2.0]", True),
    ("true in [1]", False), ('"ei" in params.name', True), ('"" in "abc"', True),
    ('"max" in context.limits', True), ('"min" in context.limits', False),
    ("[1] in [[1], [2]]", True), ("null in [null]", True),
    # references
    ("params.n", 5), ("nodes.build.outputs.report", "ok"), ("page", "index.md"), ("index", 2),
    ("nodes.build.outputs.missing", None), ("nodes.nothere.outputs.x", None),
    ("params.empty.deeper.still", None), ("context.limits.max", 10),
    ("nodes.lint.outputs", {}), ("params.tags", ["a", "b"]),
    # literals and arrays
    ("[1, 'a', null, [true]]", [1, "a", None, [True]]), ("null", None), ("'x'", "x"),
]


@pytest.mark.parametrize(("text", "value"), VALUES)
def test_values(text: str, value: Any) -> None:
    result = ev(text)
    assert result == value
    assert type(result) is type(value)


# (text, exact reason, kind)
EVAL_ERRORS = [
    ("1 / 0", "division by zero", "arithmetic", 2),
    ("1 % 0", "modulo by zero", "arithmetic", 2),
    ("1.5 / 0.0", "division by zero", "arithmetic", 4),
    ("1 / 0.0", "division by zero", "arithmetic", 2),
    ("'a' - 1", "'-' needs two numbers, got a string and a number", "type", 4),
    ("true * 2", "'*' needs two numbers, got a boolean and a number", "type", 5),
    ("null / 1", "'/' needs two numbers, got null and a number", "type", 5),
    ("[1] % 1", "'%' needs two numbers, got an array and a number", "type", 4),
    ("'a' + 1", "'+' needs two numbers, two strings or two arrays, got a string and a number",
     "type", 4),
    ("[1] + 'a'", "'+' needs two numbers, two strings or two arrays, got an array and a string",
     "type", 4),
    ("true + true", "'+' needs two numbers, two strings or two arrays, got a boolean and a boolean",
     "type", 5),
    ("1 < 'a'", "'<' compares two numbers or two strings, got a number and a string", "type", 2),
    ("null >= 1", "'>=' compares two numbers or two strings, got null and a number", "type", 5),
    ("true > false", "'>' compares two numbers or two strings, got a boolean and a boolean",
     "type", 5),
    ("[1] <= [2]", "'<=' compares two numbers or two strings, got an array and an array",
     "type", 4),
    ("1 && true", "'&&' needs booleans, got a number on the left", "type", 2),
    ("true && 'x'", "'&&' needs booleans, got a string on the right", "type", 5),
    ("null || true", "'||' needs booleans, got null on the left", "type", 5),
    ("false or 0", "'||' needs booleans, got a number on the right", "type", 6),
    ("!1", "'!' needs a boolean, got a number", "type", 0),
    ("not null", "'!' needs a boolean, got null", "type", 0),
    ("-'a'", "'-' needs a number, got a string", "type", 0),
    ("-true", "'-' needs a number, got a boolean", "type", 0),
    ("1 in 'abc'", "'in' on a string needs a string to look for, got a number", "type", 2),
    ("1 in context.limits", "'in' on an object needs a string key, got a number", "type", 2),
    ("'a' in null", "'in' needs an array, a string or an object to look in, got null", "type", 4),
    ("'a' in 5", "'in' needs an array, a string or an object to look in, got a number", "type", 4),
    ("missing", "unknown name 'missing'", "name", 0),
    ("1 + secrets.token", "unknown name 'secrets'", "name", 4),
    ("params.name.first", "cannot read 'first' of params.name, which is a string", "type", 0),
    ("params.tags.length", "cannot read 'length' of params.tags, which is an array", "type", 0),
    ("nodes.build.outputs.count.x.y",
     "cannot read 'x' of nodes.build.outputs.count, which is a number", "type", 0),
]


@pytest.mark.parametrize(("text", "reason", "kind", "offset"), EVAL_ERRORS)
def test_eval_errors(text: str, reason: str, kind: str, offset: int) -> None:
    with pytest.raises(AgxEvalError) as caught:
        ev(text)
    err = caught.value
    assert err.reason == reason
    assert err.kind == kind
    assert err.code == "RT062"
    assert err.offset == offset
    assert err.text == text
    assert err.message.startswith(reason + " at column ")
    assert err.message.endswith(f" of `{text}`")


def test_error_message_names_column_and_expression() -> None:
    with pytest.raises(AgxEvalError) as caught:
        ev("params.n > 1 && params.name")
    assert caught.value.message == (
        "'&&' needs booleans, got a string on the right at column 14 of "
        "`params.n > 1 && params.name`"
    )
    assert caught.value.hint == "AGX has no truthiness: compare explicitly, e.g. len(x) > 0"


def test_long_or_multiline_expressions_are_not_quoted() -> None:
    text = "params.n +\n  'x'"
    with pytest.raises(AgxEvalError) as caught:
        ev(text)
    assert caught.value.message == (
        "'+' needs two numbers, two strings or two arrays, got a number and a string "
        "at line 1, column 10"
    )


def test_overflow_is_an_error_not_infinity() -> None:
    big = "1" + "0" * 200 + ".0"
    with pytest.raises(AgxEvalError) as caught:
        ev(f"{big} * {big} * {big}")
    assert caught.value.kind == "arithmetic"
    assert "overflow" in caught.value.reason
    with pytest.raises(AgxEvalError, match="overflow"):
        ev("1" + "0" * 400 + " / 3")


def test_evaluate_bool() -> None:
    assert evaluate_bool(parse("params.n == 5"), SCOPE) is True
    assert evaluate_bool(parse("false"), SCOPE) is False
    with pytest.raises(AgxEvalError) as caught:
        evaluate_bool(parse("params.name"), SCOPE)
    assert caught.value.reason == 'the condition must give a boolean, got a string ("rein")'
    assert caught.value.kind == "type"
    with pytest.raises(AgxEvalError, match="got null"):
        evaluate_bool(parse("nodes.build.outputs.missing"), SCOPE)


def test_mapping_scope_reads_status_from_nodes_or_statuses() -> None:
    assert SCOPE.node_status("build") == "succeeded"
    assert SCOPE.node_status("nope") is None
    explicit = MappingScope({}, statuses={"a": "failed"})
    assert explicit.node_status("a") == "failed"
    assert explicit.node_status("build") is None
    with pytest.raises(KeyError):
        explicit.lookup("params")


def test_any_mapping_and_sequence_work_as_values() -> None:
    scope = MappingScope({"o": MappingProxyType({"k": (1, 2)})})
    assert ev("o.k == [1, 2]", scope) is True
    assert ev("len(o.k) + 1", scope) == 3
    assert ev("o.k + [3]", scope) == [1, 2, 3]


class CountingScope:
    """A test double that records which roots were looked up."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def lookup(self, root: str) -> Any:
        self.seen.append(root)
        return {"a": True, "b": False}[root]

    def node_status(self, node_id: str) -> str | None:
        return None


def test_short_circuit_skips_the_right_side() -> None:
    scope = CountingScope()
    assert evaluate(parse("b && a"), scope) is False
    assert evaluate(parse("a || b"), scope) is True
    assert scope.seen == ["b", "a"]


def test_values_too_deep_to_compare_are_an_error_not_a_crash() -> None:
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(AgxEvalError) as caught:
        ev("v == w", MappingScope({"v": deep, "w": deep}))
    assert caught.value.kind == "limit"
