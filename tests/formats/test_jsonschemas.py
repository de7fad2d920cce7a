"""rein's one JSON Schema validator (rein.formats.jsonschemas): drafts, offline references,
formats where asked, violations in document order, and values the validator cannot take."""

from __future__ import annotations

import pytest

from rein.formats.jsonschemas import BadSchema, NotJSON, compiled, errors, most_relevant, where


def messages(schema: object, value: object) -> list[str]:
    return [f"{where(e)}: {e.message}" for e in errors(compiled(schema), value)]


def test_the_draft_follows_dollar_schema() -> None:
    # items as a list is tuple validation in draft 7, and a schema error in 2020-12.
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}
    assert messages(draft7, [1]) == ['/0: 1 is not of type "string"']
    with pytest.raises(BadSchema):
        compiled({"items": [{"type": "string"}]})


def test_a_dollar_schema_naming_no_draft_is_refused_unfetched() -> None:
    with pytest.raises(BadSchema, match="names no JSON Schema draft"):
        compiled({"$schema": "https://example.invalid/meta"})


def test_a_remote_reference_is_never_fetched() -> None:
    with pytest.raises(BadSchema, match="example.invalid"):
        compiled({"$ref": "https://example.invalid/schema.json"})


def test_a_broken_schema_says_where() -> None:
    with pytest.raises(BadSchema, match="^/properties/a/type: "):
        compiled({"properties": {"a": {"type": 3}}})


def test_formats_are_asserted_only_when_asked() -> None:
    schema = {"type": "string", "format": "date-time"}
    assert errors(compiled(schema), "yesterday") == []
    [error] = errors(compiled(schema, formats=True), "yesterday")
    assert "date-time" in error.message


def test_violations_come_in_document_order_indexes_numerically() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    value = ["x"] * 11
    assert [where(e) for e in errors(compiled(schema), value)] == [f"/{i}" for i in range(11)]


def test_the_most_relevant_violation_is_the_shallowest() -> None:
    schema = {"type": "object", "required": ["name"],
              "properties": {"tags": {"items": {"type": "string"}}}}
    error = most_relevant(errors(compiled(schema), {"tags": [1]}))
    assert error is not None and where(error) == "/"
    assert most_relevant([]) is None


def test_a_lone_surrogate_is_a_violation_not_a_crash() -> None:
    # JSON's "\ud800" escape parses to a string the validator cannot take.
    schema = {"type": "object", "properties": {"b": {"type": "string"}}}
    found = errors(compiled(schema), {"b": "a\ud800", "c": ["ok", "\udc00"]})
    assert all(isinstance(e, NotJSON) for e in found)
    assert [where(e) for e in found] == ["/b", "/c/1"]
    assert found[0].message.startswith('"a\\ud800" is not Unicode text')
    assert found[0].message.encode("utf-8")  # printable: the surrogate is escaped


def test_a_nan_or_infinite_number_is_not_read_as_null() -> None:
    # The validator alone says "null is not of type "number"" of both.
    schema = {"type": "object", "required": ["z"],
              "properties": {"a": {"type": "number"}, "b": {"type": ["number", "null"]}}}
    found = messages(schema, {"a": float("nan"), "b": float("inf")})
    assert found == ['/: "z" is a required property',
                     "/a: nan is not a JSON number (JSON has no NaN or Infinity)",
                     "/b: inf is not a JSON number (JSON has no NaN or Infinity)"]


def test_a_lone_surrogate_in_a_name_is_shown_printable() -> None:
    [error] = errors(compiled({"type": "object"}), {"k\udc00": 1})
    assert where(error) == "/k\ufffd" and error.message.startswith('"k\\udc00"')
