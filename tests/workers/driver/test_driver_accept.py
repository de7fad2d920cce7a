"""rein's own verdict on an envelope (``driver_accept.accepts``) is the reference's, exactly.

For the ``respond_with`` schemas rein writes, :func:`accepts` decides without loading a
validator, so it must say yes exactly where ``jsonschema`` says yes and no exactly where it
says no; for a schema with any other keyword it must not decide at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rein.workers.driver.accept import accepts
from tests.workers.driver.test_driver_envelope_fast import (
    DELETE,
    FIELDS,
    JSON,
    OUTPUTS,
    good,
    instruction,
    mutated,
)


def reference(schema: Any, instance: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(OUTPUTS)),
       changes=st.lists(st.tuples(st.sampled_from(FIELDS), JSON | st.just(DELETE)),
                        max_size=3))
def test_the_verdict_on_rein_s_own_schemas_is_the_reference_s(
        tmp_path: Path, kind: str, changes: list[tuple[str, Any]]) -> None:
    ins = instruction(tmp_path, kind)
    envelope = mutated(good(ins), changes)
    assert accepts(ins["respond_with"], envelope) is reference(ins["respond_with"], envelope)


@pytest.mark.parametrize(("schema", "instance", "valid"), [
    ({"const": 1}, 1.0, True),  # JSON numbers compare by value
    ({"const": 1}, True, False),  # a boolean is not a number
    ({"enum": [False]}, 0, False),
    ({"type": "integer"}, 2.0, True),  # 2020-12: a zero fractional part is an integer
    ({"type": "integer"}, 2.5, False),
    ({"type": "number"}, True, False),
    ({"type": "integer", "minimum": 1}, 0, False),
    ({"minimum": 1}, "text", True),  # minimum only constrains numbers
    ({"const": {"a": [1, "x"]}}, {"a": [1.0, "x"]}, True),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"b": 1}, False),
    ({"if": {"properties": {"s": {"const": "done"}}}, "then": {"required": ["o"]}},
     {"s": "done"}, False),
    ({"if": {"properties": {"s": {"const": "done"}}}, "then": {"required": ["o"]}},
     {"s": "failed"}, True),
    ({"items": {"type": "string"}}, ["a", 1], False),
    (False, {}, False),
])
def test_the_keywords_mean_what_json_schema_says(schema: Any, instance: Any,
                                                 valid: bool) -> None:
    assert reference(schema, instance) is valid
    assert accepts(schema, instance) is valid


@pytest.mark.parametrize("schema", [
    {"type": "object", "allOf": [{"required": ["a"]}]},
    {"pattern": "^a"}, {"type": "string", "minLength": 1}, {"$ref": "#/$defs/x"},
    {"properties": {"a": {"format": "email"}}},
    {"type": "decimal"},
])
def test_any_other_keyword_is_left_to_the_validators(schema: Any) -> None:
    assert accepts(schema, {"a": "b"}) is None
