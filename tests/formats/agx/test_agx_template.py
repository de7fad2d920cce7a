"""Templates: splitting, rendering (stringification), and their syntax and run-time errors."""

from __future__ import annotations

import pytest

from rein.formats.agx import (
    AgxEvalError,
    AgxSyntaxError,
    Interpolation,
    MappingScope,
    has_interpolation,
    parse,
    parse_template,
    render,
)

SCOPE = MappingScope({
    "params": {"version": "1.2.0", "n": 3, "ratio": 2.0, "ok": True, "none": None,
               "list": [1, "a", None], "obj": {"k": "v", "n": [1.5]}},
    "graph": {"title": "Release"},
})


def test_plain_text_has_one_literal_part() -> None:
    template = parse_template("no interpolation here")
    assert template.parts == ("no interpolation here",)
    assert template.interpolations == ()
    assert render(template, SCOPE) == "no interpolation here"
    assert parse_template("").parts == ()


def test_parts_and_offsets() -> None:
    text = "Approve ${{ params.version }} of ${{graph.title}}!"
    template = parse_template(text)
    assert template.source == text
    assert str(template) == text
    assert len(template.parts) == 5
    assert template.parts[0] == "Approve "
    first = template.parts[1]
    assert isinstance(first, Interpolation)
    assert first.expr == parse(" params.version ")
    assert text[first.offset:].startswith(" params.version }}")
    assert template.parts[2] == " of "
    assert template.parts[4] == "!"
    assert parse_template(text) is template  # cached


RENDERED = [
    ("v${{ params.version }}", "v1.2.0"),
    ("${{ params.n }} items", "3 items"),
    ("${{ params.n * 2 }}", "6"),
    ("${{ params.ratio }}", "2"),  # JSON has one number type: 2.0 renders as 2
    ("${{ params.n / 2 }}", "1.5"),
    ("${{ params.ok }}/${{ !params.ok }}", "true/false"),
    ("[${{ params.none }}]", "[]"),
    ("${{ params.list }}", '[1,"a",null]'),
    ("${{ params.obj }}", '{"k":"v","n":[1.5]}'),
    ("${{ 'é' }}", "é"),
    ("${{a}}${{b}}".replace("a", "params.n").replace("b", "params.n"), "33"),
    ("cost: $5 and {{ braces }} and $ {{x}}", "cost: $5 and {{ braces }} and $ {{x}}"),
    ("$${{ params.n }}", "$3"),
    ("${{ '}}' }}", "}}"),  # a '}}' inside a string does not end the interpolation
    ("${{ \"a\\\"}}\" }}", 'a"}}'),
    ("}} ${{ params.n }} }}", "}} 3 }}"),
    ("line1\n${{\n  params.version\n}}\nline3", "line1\n1.2.0\nline3"),
]


@pytest.mark.parametrize(("text", "rendered"), RENDERED)
def test_render(text: str, rendered: str) -> None:
    assert render(parse_template(text), SCOPE) == rendered


TEMPLATE_ERRORS = [
    ("Hi ${{ params.n", "unterminated '${{' at column 4", 3),
    ("${{ 'a }}", "unterminated string at column 5", 4),
    ("x ${{ }}", "empty interpolation '${{ }}' at column 3", 2),
    ("x ${{}}", "empty interpolation '${{ }}' at column 3", 2),
    ("x ${{ a + }}", "the expression ends where a value was expected after '+' at column 11", 10),
    ("ok ${{ a }} then ${{ lenn(a) }}", ("unknown function 'lenn' at column 22; did you mean "
                                         "'len'?"), 21),
    ("line\n  ${{ a[0] }}", "indexing with [...] is not supported at line 2, column 8", 12),
    ("${{ ${{ a }} }}", "'${{ }}' interpolation is for templates, not expressions at column 5",
     4),
]


@pytest.mark.parametrize(("text", "message", "offset"), TEMPLATE_ERRORS)
def test_template_syntax_errors(text: str, message: str, offset: int) -> None:
    with pytest.raises(AgxSyntaxError) as caught:
        parse_template(text)
    assert caught.value.message == message
    assert caught.value.offset == offset
    assert caught.value.text == text
    assert caught.value.code == "AG204"
    assert caught.value.hint


def test_render_errors_point_into_the_template() -> None:
    text = "Total: ${{ params.n + params.version }}"
    with pytest.raises(AgxEvalError) as caught:
        render(parse_template(text), SCOPE)
    err = caught.value
    assert err.offset == text.index("+")
    assert err.text == text
    assert err.message == (
        "'+' needs two numbers, two strings or two arrays, got a number and a string at "
        f"column 21 of `{text}`"
    )


def test_render_unknown_name() -> None:
    with pytest.raises(AgxEvalError, match="unknown name 'nodes' at column 8"):
        render(parse_template("x = ${{nodes.a}}"), SCOPE)


def test_render_refuses_non_json_values_from_the_scope() -> None:
    scope = MappingScope({"v": object(), "f": float("nan")})
    with pytest.raises(AgxEvalError, match="cannot turn a non-JSON value"):
        render(parse_template("${{ v }}"), scope)
    with pytest.raises(AgxEvalError, match="non-finite"):
        render(parse_template("${{ [f] }}"), scope)


def test_render_refuses_values_too_deep_to_print() -> None:
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(AgxEvalError) as caught:
        render(parse_template("x ${{ v }}"), MappingScope({"v": deep}))
    assert caught.value.kind == "limit"
    assert caught.value.offset == 5


def test_has_interpolation() -> None:
    assert has_interpolation("a ${{ b }}")
    assert has_interpolation("${{")
    assert not has_interpolation("a $ {{ b }}")
    assert not has_interpolation("a ${ b }")
    assert not has_interpolation("")


def test_non_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not NoneType"):
        parse_template(None)  # type: ignore[arg-type]
