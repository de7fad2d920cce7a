"""Output checks: declared value types (RT031), schemas (RT032), required outputs (RT033)."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

from rein.engine.run.outputs import OutputProblem, check_outputs, first_schema_error, type_problem


def spec(type_name: str, **extra) -> dict:
    return {"type": type_name, "description": "an output", **extra}


GOOD = [
    ("string", "hello"),
    ("text", ""),
    ("markdown", "# Title"),
    ("number", 1.5),
    ("number", 3),
    ("integer", 7),
    ("integer", 2.0),
    ("boolean", False),
    ("object", {"a": 1}),
    ("array", [1, "two"]),
    ("json", {"nested": [1, None, True, "x", 1.5]}),
    ("file", "dist/pkg.whl"),
    ("directory", "dist"),
    ("file_set", ["a.txt", "b/c.txt"]),
    ("file_set", []),
    ("artifact", {"id": "build-42", "uri": "s3://bucket/x"}),
    ("reference", "https://pypi.org/project/rein/"),
    ("reference", "urn:isbn:0451450523"),
    ("any", object()),
]

BAD = [
    ("string", 5, "should be a string, got a number"),
    ("markdown", ["x"], "should be a string, got an array"),
    ("number", True, "should be a finite number, got a boolean"),
    ("number", "1", "should be a finite number, got a string"),
    ("number", float("inf"), "should be a finite number, got a number"),
    ("integer", 1.5, "should be an integer, got a number"),
    ("integer", False, "should be an integer, got a boolean"),
    ("boolean", 0, "should be a boolean, got a number"),
    ("boolean", "true", "should be a boolean, got a string"),
    ("object", [], "should be an object, got an array"),
    ("array", {}, "should be an array, got an object"),
    ("array", "abc", "should be an array, got a string"),
    ("json", {"x": float("nan")}, "is not a JSON value"),
    ("json", {1: "non-string key"}, "is not a JSON value"),
    ("file", "", "should be a file path (a non-empty string), got a string"),
    ("file", 3, "should be a file path (a non-empty string), got a number"),
    ("directory", None, None),  # null is "missing", checked separately
    ("file_set", "a.txt", "should be an array of file paths, got a string"),
    ("file_set", ["a.txt", 2], "item 1 should be a file path (a non-empty string), got a number"),
    ("artifact", {"name": "x"}, 'should be an artifact object with a string "id", got an object'),
    ("artifact", {"id": 3}, 'should be an artifact object with a string "id", got an object'),
    ("artifact", "build-42", 'should be an artifact object with a string "id", got a string'),
    ("reference", "not a uri", "should be a URI with a scheme (e.g. https://…), got a string"),
    ("reference", "/relative/path", "should be a URI with a scheme (e.g. https://…), got a string"),
]


@pytest.mark.parametrize(("type_name", "value"), GOOD)
def test_values_of_the_declared_type_pass(type_name, value):
    assert type_problem(value, type_name) is None
    assert check_outputs({"out": value}, {"out": spec(type_name)}) == []


@pytest.mark.parametrize(("type_name", "value", "why"), [b for b in BAD if b[2] is not None])
def test_values_of_another_type_are_rt031(type_name, value, why):
    assert check_outputs({"out": value}, {"out": spec(type_name)}) == [
        OutputProblem(code="RT031", output="out", message=f"output 'out' {why}")
    ]


def test_every_ags_value_type_is_covered():
    schema = json.loads(
        (files("ags") / "schema" / "agentic-graph-1.0.schema.json").read_text(encoding="utf-8")
    )
    declared = set(schema["$defs"]["value_type"]["enum"])
    assert {t for t, _ in GOOD} == declared


def test_unknown_declared_type_is_reported():
    assert type_problem("x", "blob") == "has an unknown declared type 'blob'"


def test_missing_required_output_is_rt033():
    specs = {"report": spec("string"), "extra": spec("string", required=False)}
    assert check_outputs({}, specs) == [
        OutputProblem(code="RT033", output="report", message="required output 'report' was not produced")
    ]
    assert check_outputs({"report": None}, specs)[0].code == "RT033"


def test_optional_names_excuse_missing_outputs_but_not_bad_ones():
    specs = {"report": spec("string")}
    assert check_outputs({}, specs, optional=frozenset({"report"})) == []
    assert check_outputs({"report": 1}, specs, optional=frozenset({"report"}))[0].code == "RT031"


def test_null_counts_as_not_produced_even_where_the_type_allows_it():
    assert type_problem(None, "json") is None
    assert [p.code for p in check_outputs({"data": None}, {"data": spec("json")})] == ["RT033"]


def test_undeclared_outputs_are_ignored():
    assert check_outputs({"stray": 1}, {}) == []


def test_schema_mismatch_is_rt032_with_the_first_error():
    specs = {"summary": spec("object", schema={"type": "object", "required": ["passed"]})}
    problems = check_outputs({"summary": {"failed": 0}}, specs)
    assert problems == [
        OutputProblem(
            code="RT032",
            output="summary",
            message="output 'summary' does not match its schema: at /: \"passed\" is a "
                    "required property",
        )
    ]


def test_type_is_checked_before_schema():
    specs = {"n": spec("integer", schema={"minimum": 10})}
    assert [p.code for p in check_outputs({"n": "5"}, specs)] == ["RT031"]
    assert [p.code for p in check_outputs({"n": 5}, specs)] == ["RT032"]
    assert check_outputs({"n": 10}, specs) == []


def test_a_broken_schema_is_reported_not_raised():
    specs = {"n": spec("integer", schema={"type": "whole-number"})}
    (problem,) = check_outputs({"n": 5}, specs)
    assert problem.code == "RT032"
    assert "its schema is not a valid JSON Schema" in problem.message


def test_remote_refs_are_not_fetched():
    from rein.engine.run.outputs import SchemaInvalid

    with pytest.raises(SchemaInvalid):
        first_schema_error(1, {"$ref": "https://example.invalid/schema.json"})


def test_an_unknown_dollar_schema_is_a_broken_schema_and_nothing_is_fetched():
    from rein.engine.run.outputs import SchemaInvalid

    with pytest.raises(SchemaInvalid, match="names no JSON Schema draft"):
        first_schema_error(1, {"$schema": "https://example.invalid/meta", "type": "string"})


def test_the_shallowest_violation_is_the_one_reported():
    schema = {"type": "object", "required": ["name"],
              "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}
    assert first_schema_error({"tags": [1, 2]}, schema) == \
        'at /: "name" is a required property'


def test_schema_draft_follows_dollar_schema():
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}
    assert first_schema_error([1], draft7) == 'at /0: 1 is not of type "string"'


def test_file_outputs_must_exist_inside_the_workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "dist").mkdir(parents=True)
    (ws / "dist" / "pkg.whl").write_bytes(b"PK")
    (tmp_path / "outside.txt").write_text("x")
    (ws / "escape").symlink_to(tmp_path / "outside.txt")
    specs = {
        "wheel": spec("file"),
        "folder": spec("directory"),
        "all": spec("file_set"),
    }
    good = {"wheel": "dist/pkg.whl", "folder": "dist", "all": ["dist/pkg.whl"]}
    assert check_outputs(good, specs, workspace=ws) == []
    absolute = {**good, "wheel": str(ws / "dist" / "pkg.whl")}
    assert check_outputs(absolute, specs, workspace=ws) == []

    bad = {"wheel": "dist/missing.whl", "folder": "dist/pkg.whl", "all": ["../outside.txt", "escape"]}
    messages = [p.message for p in check_outputs(bad, specs, workspace=ws)]
    assert messages == [
        "output 'wheel' names 'dist/missing.whl', which is not a file",
        "output 'folder' names 'dist/pkg.whl', which is not a directory",
        "output 'all' item 0 names '../outside.txt', which is outside the workspace",
    ]
    escaped = check_outputs({"wheel": "escape"}, {"wheel": spec("file")}, workspace=ws)
    assert escaped[0].message == "output 'wheel' names 'escape', which is outside the workspace"


def test_problem_json_shape():
    problem = OutputProblem(code="RT033", output="x", message="m")
    assert problem.to_json() == {"code": "RT033", "output": "x", "message": "m"}
