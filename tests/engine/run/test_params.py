"""Binding parameters: coercion from the command line, AG301, AG302."""

from __future__ import annotations

import pytest

from rein.engine.run.params import ParamsError, bind_params, coerce, parse_assignments
from rein.errors import ConfigError

SPECS = {
    "version": {"type": "string", "description": "v"},
    "retries": {"type": "integer", "description": "n", "default": 1},
    "index": {"type": "string", "description": "i", "enum": ["pypi", "testpypi"],
              "required": False},
    "tags": {"type": "array", "description": "t", "required": False,
             "schema": {"type": "array", "items": {"type": "string"}}},
}


def test_command_line_values_are_coerced_to_the_declared_type() -> None:
    raw = parse_assignments(["version=1.2.0", "retries=3", "tags=[\"a\",\"b\"]"])
    bound = bind_params(SPECS, raw, raw_text=frozenset(raw))
    assert bound == {"version": "1.2.0", "retries": 3, "tags": ["a", "b"]}


def test_a_string_type_keeps_json_looking_text() -> None:
    assert coerce("3", {"type": "string"}) == "3"
    assert coerce("true", {"type": "boolean"}) is True


def test_missing_required_is_ag301_with_a_hint() -> None:
    with pytest.raises(ParamsError) as info:
        bind_params(SPECS, {})
    [finding] = info.value.findings
    assert finding.code == "AG301"
    assert finding.message == "required parameter 'version' has no value and no default"
    assert finding.hint == "pass --param version=VALUE or put it in a --params file"
    assert finding.location.pointer == "/params/version"


def test_values_that_do_not_fit_are_ag302_all_at_once() -> None:
    raw = {"version": "1", "retries": "many", "index": "npm", "tags": "[1]", "typo": "x"}
    with pytest.raises(ParamsError) as info:
        bind_params(SPECS, raw, raw_text=frozenset(raw))
    messages = [f.message for f in info.value.findings]
    assert [f.code for f in info.value.findings] == ["AG302"] * 4
    assert messages[0].startswith("parameter 'typo' is not declared")
    assert messages[1] == "parameter 'retries': expected integer, got \"many\""
    assert messages[2] == 'parameter \'index\': "npm" is not one of ["pypi", "testpypi"]'
    assert messages[3].startswith("parameter 'tags': does not match its schema")


def test_a_pair_without_equals_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="is not NAME=VALUE"):
        parse_assignments(["version"])
