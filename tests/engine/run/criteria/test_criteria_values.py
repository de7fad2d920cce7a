"""json_schema, regex and expression criteria."""

from __future__ import annotations

import pytest
from criteria_helpers import check

SCHEMA = {
    "type": "object",
    "required": ["count", "items"],
    "properties": {"count": {"type": "integer", "minimum": 1}, "items": {"type": "array"}},
}


def test_json_schema_inline_passes(ctx_for):
    ctx = ctx_for({"report": {"count": 2, "items": ["a", "b"]}})
    result = check({"id": "s", "kind": "json_schema", "output": "report", "schema": SCHEMA}, ctx)
    assert result.passed
    assert result.evidence == "output 'report' matches the schema"


def test_json_schema_evidence_is_the_first_error_with_its_place(ctx_for):
    ctx = ctx_for({"report": {"count": 0, "items": []}})
    result = check({"id": "s", "kind": "json_schema", "output": "report", "schema": SCHEMA}, ctx)
    assert not result.passed
    assert result.error is None
    assert result.evidence == "at /count: 0 is less than the minimum of 1"


def test_json_schema_ref_reads_a_workspace_file(ctx_for):
    ctx = ctx_for({"report": {"count": "two"}})
    (ctx.workspace / "schemas").mkdir()
    (ctx.workspace / "schemas" / "report.yaml").write_text(
        "type: object\nproperties:\n  count: {type: integer}\n"
    )
    criterion = {"id": "s", "kind": "json_schema", "output": "report", "schema_ref": "schemas/report.yaml"}
    result = check(criterion, ctx)
    assert not result.passed
    assert result.evidence == 'at /count: "two" is not of type "integer"'


@pytest.mark.parametrize(
    ("ref", "code"),
    [("../schema.json", "CRIT002"), ("https://example.org/s.json", "CRIT001"), ("none.json", "CRIT001")],
)
def test_json_schema_ref_outside_remote_or_missing_is_an_error(ctx_for, tmp_path, ref, code):
    (tmp_path / "schema.json").write_text("{}")
    criterion = {"id": "s", "kind": "json_schema", "output": "report", "schema_ref": ref}
    result = check(criterion, ctx_for({"report": {}}))
    assert not result.passed
    assert result.error_code == code


def test_json_schema_invalid_schema_is_an_error(ctx_for):
    criterion = {"id": "s", "kind": "json_schema", "output": "r", "schema": {"type": "nonsense"}}
    result = check(criterion, ctx_for({"r": 1}))
    assert not result.passed
    assert result.error.startswith("the schema is not a valid JSON Schema")


def test_json_schema_missing_output_fails(ctx_for):
    result = check({"id": "s", "kind": "json_schema", "output": "r", "schema": {}}, ctx_for({}))
    assert not result.passed
    assert result.evidence == "output 'r' was not produced"


def test_regex_searches_the_output(ctx_for):
    ctx = ctx_for({"log": "build ok\nVersion: 1.4.2\n"})
    result = check({"id": "r", "kind": "regex", "output": "log", "pattern": r"\d+\.\d+\.\d+"}, ctx)
    assert result.passed
    assert result.evidence == r"/\d+\.\d+\.\d+/ matched '1.4.2' at offset 18 of output 'log'"


def test_regex_on_a_file_output_says_it_searched_the_path(ctx_for):
    specs = {"reply": {"type": "file", "description": "d"}}
    ctx = ctx_for({"reply": "reply.md"}, output_specs=specs)
    for criterion in ({"output": "reply"}, {"target": "self.outputs.reply"}):
        result = check({"id": "r", "kind": "regex", "pattern": "^# Bug", **criterion}, ctx)
        assert not result.passed
        assert result.evidence.endswith(
            ": 'reply.md' (a file output's value is its path, not its content; check the "
            "content with a command criterion)")
    text = check({"id": "r", "kind": "regex", "output": "log", "pattern": "x"},
                 ctx_for({"log": "reply.md"}, output_specs={"log": {"type": "text"}}))
    assert text.evidence == "/x/ found no match in output 'log': 'reply.md'"


def test_regex_flags(ctx_for):
    ctx = ctx_for({"log": "first\nVERSION 2"})
    base = {"id": "r", "kind": "regex", "output": "log", "pattern": "^version"}
    assert not check(base, ctx).passed
    assert not check({**base, "flags": "i"}, ctx).passed  # ^ is the start of the text
    assert check({**base, "flags": "im"}, ctx).passed
    assert check({**base, "pattern": "first.VERSION", "flags": "s"}, ctx).passed
    assert check({**base, "pattern": "first \\n VERSION  # spaced", "flags": "x"}, ctx).passed


def test_regex_unknown_flag_is_an_error(ctx_for):
    result = check({"id": "r", "kind": "regex", "output": "l", "pattern": "a", "flags": "g"}, ctx_for({"l": "a"}))
    assert result.error == "unknown regex flag 'g'; use any of 'imsx'"


def test_regex_negate(ctx_for):
    ctx = ctx_for({"log": "all good"})
    base = {"id": "r", "kind": "regex", "output": "log", "pattern": "ERROR", "negate": True}
    result = check(base, ctx)
    assert result.passed
    assert result.evidence == "/ERROR/ found no match in output 'log': 'all good'"
    assert not check({**base, "pattern": "good"}, ctx).passed


def test_regex_missing_output_fails_even_negated(ctx_for):
    criterion = {"id": "r", "kind": "regex", "output": "log", "pattern": "x", "negate": True}
    assert not check(criterion, ctx_for({})).passed


def test_regex_target_expression_and_json_stringification(ctx_for):
    ctx = ctx_for({"summary": {"failed": 0, "passed": 12}})
    result = check(
        {"id": "r", "kind": "regex", "target": "self.outputs.summary", "pattern": '"failed":0'}, ctx
    )
    assert result.passed
    assert "of target 'self.outputs.summary'" in result.evidence
    number = check({"id": "r", "kind": "regex", "target": "self.outputs.summary.passed", "pattern": "^12$"}, ctx)
    assert number.passed


def test_regex_invalid_pattern_is_an_error(ctx_for):
    result = check({"id": "r", "kind": "regex", "output": "l", "pattern": "(unclosed"}, ctx_for({"l": "x"}))
    assert not result.passed
    assert result.error_code == "CRIT001"


def test_regex_target_evaluation_error_is_an_error(ctx_for):
    result = check({"id": "r", "kind": "regex", "target": "1 / 0", "pattern": "x"}, ctx_for())
    assert not result.passed
    assert result.error_code == "RT062"


def test_expression_true_and_false(ctx_for):
    ctx = ctx_for({"coverage_percent": 91.5})
    passing = check({"id": "e", "kind": "expression", "expr": "self.outputs.coverage_percent >= 85"}, ctx)
    assert passing.passed
    assert passing.evidence == "self.outputs.coverage_percent >= 85 → true"
    failing = check({"id": "e", "kind": "expression", "expr": "self.outputs.coverage_percent >= 95"}, ctx)
    assert not failing.passed and failing.error is None


def test_expression_non_boolean_is_an_evaluation_error(ctx_for):
    result = check({"id": "e", "kind": "expression", "expr": "self.outputs.n"}, ctx_for({"n": 3}))
    assert not result.passed
    assert result.error_code == "RT062"
    assert "must give a boolean" in result.error


def test_expression_type_error_and_syntax_error_are_errors(ctx_for):
    ctx = ctx_for({"n": "three"})
    typed = check({"id": "e", "kind": "expression", "expr": "self.outputs.n > 2"}, ctx)
    assert typed.error_code == "RT062"
    syntax = check({"id": "e", "kind": "expression", "expr": "self.outputs.n >"}, ctx)
    assert syntax.error_code == "AG204"
    assert not typed.passed and not syntax.passed
