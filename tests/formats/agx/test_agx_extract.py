"""Reference chains and function calls, as the validator reads them; and the public names."""

from __future__ import annotations

import pickle

import pytest

from rein.formats import agx
from rein.formats.agx import NOT_LITERAL, Call, Ref, calls, parse, parse_template, references


def test_references_in_source_order() -> None:
    text = 'nodes.build.outputs.report == params.x && "a" in loop.previous.items || page'
    assert references(parse(text)) == [
        Ref(path=("nodes", "build", "outputs", "report"), offset=0),
        Ref(path=("params", "x"), offset=text.index("params")),
        Ref(path=("loop", "previous", "items"), offset=text.index("loop")),
        Ref(path=("page",), offset=text.index("page")),
    ]


def test_references_inside_calls_arrays_and_unary() -> None:
    text = "!all([len(self.outputs.findings) == 0, -env.n < 1]) && default(a.b, c)"
    assert [str(r) for r in references(parse(text))] == [
        "self.outputs.findings", "env.n", "a.b", "c"
    ]
    ref = references(parse(text))[0]
    assert ref.root == "self"
    assert text[ref.offset:].startswith("self.outputs.findings")


def test_literals_and_function_names_are_not_references() -> None:
    assert references(parse('len("nodes.a") + 1 == 2 && true != null')) == []


def test_calls_with_literal_arguments() -> None:
    text = 'output("build", "report") == "x" && succeeded("lint") && get(obj, "a.b", -1)'
    assert calls(parse(text)) == [
        Call(name="output", args=("build", "report"), offset=0),
        Call(name="succeeded", args=("lint",), offset=text.index("succeeded")),
        Call(name="get", args=(NOT_LITERAL, "a.b", -1), offset=text.index("get")),
    ]


def test_calls_mark_computed_arguments() -> None:
    found = calls(parse('output(params.node, "x" + "y") + len([1]) + int(true) + str(null)'))
    assert [c.name for c in found] == ["output", "len", "int", "str"]
    assert found[0].args == (NOT_LITERAL, NOT_LITERAL)
    assert found[1].args == (NOT_LITERAL,)  # an array literal is not a scalar literal
    assert found[2].args == (True,)
    assert found[3].args == (None,)


def test_nested_calls_outer_first() -> None:
    text = "len(split(lower(a), ','))"
    found = calls(parse(text))
    assert [(c.name, c.offset) for c in found] == [("len", 0), ("split", 4), ("lower", 10)]
    assert found[1].args == (NOT_LITERAL, ",")


def test_template_offsets_are_template_positions() -> None:
    text = 'Ship ${{ params.version }} after ${{ output("build", "report") }}'
    template = parse_template(text)
    assert references(template) == [Ref(path=("params", "version"), offset=9)]
    assert text[9:].startswith("params.version")
    (call,) = calls(template)
    assert call == Call(name="output", args=("build", "report"), offset=text.index("output"))
    assert references(parse_template("plain text")) == []


def test_extraction_needs_a_parsed_value() -> None:
    with pytest.raises(TypeError, match="not str"):
        references("a.b")  # type: ignore[arg-type]


def test_not_literal_is_a_singleton() -> None:
    assert repr(NOT_LITERAL) == "NOT_LITERAL"
    assert type(NOT_LITERAL)() is NOT_LITERAL
    assert pickle.loads(pickle.dumps(NOT_LITERAL)) is NOT_LITERAL
    assert NOT_LITERAL != "NOT_LITERAL"


def test_public_names_are_pinned() -> None:
    assert agx.__all__ == [
        "FUNCTIONS", "NOT_LITERAL", "AgxEvalError", "AgxSyntaxError", "Call", "Expr",
        "Interpolation", "MappingScope", "Ref", "Scope", "Template", "calls", "evaluate",
        "evaluate_bool", "has_interpolation", "parse", "parse_template", "references",
        "render", "stringify",
    ]
    for name in agx.__all__:
        assert getattr(agx, name).__doc__ or name in {"FUNCTIONS", "NOT_LITERAL"}


def test_error_classes_sit_in_the_error_tree() -> None:
    from rein.errors import DocumentError, RunError

    assert issubclass(agx.AgxSyntaxError, DocumentError)
    assert issubclass(agx.AgxEvalError, RunError)
