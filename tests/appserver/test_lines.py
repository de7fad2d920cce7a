"""The strict line reader both stdio servers share (:mod:`rein.appserver.lines`): whatever
bytes a line holds, it gives a message, an error to answer or nothing, and never raises;
whatever it hands on, :func:`lines.encode` writes back as JSON that a strict reader takes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rein.appserver import lines


def _strict(line: bytes) -> Any:
    """JSON as RFC 8259 has it: UTF-8, no NaN or Infinity."""
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} written")
    return json.loads(line.decode("utf-8"), parse_constant=refuse)


# JSON-like values with what Python's json lets through and JSON does not: non-finite
# floats, lone surrogates, deep nesting, huge integers.
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats()
           | st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xFFFF)))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=20)
MESSAGES = st.fixed_dictionaries({}, optional={
    "id": VALUES, "method": st.sampled_from(["thread/list", "initialize"]) | VALUES,
    "params": VALUES, "result": VALUES})


def _answerable(parsed: Any) -> None:
    assert parsed is None or isinstance(parsed, dict | lines.Refusal)
    if isinstance(parsed, lines.Refusal):
        assert _strict(lines.encode(parsed.to_json()))["error"]["code"] < 0
    elif isinstance(parsed, dict):
        assert _strict(lines.encode(parsed)) == json.loads(lines.encode(parsed))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_are_read_without_raising(line: bytes) -> None:
    _answerable(lines.parse(line))


@settings(max_examples=300, deadline=None)
@given(MESSAGES)
def test_any_message_python_can_write_is_answered_as_json(message: dict[str, Any]) -> None:
    _answerable(lines.parse(json.dumps(message).encode() + b"\n"))


def test_a_request_id_is_echoed_as_it_came() -> None:
    parsed = lines.parse(b'{"id": "\\ud800x", "method": "m"}\n')
    assert isinstance(parsed, dict)
    assert lines.encode({"id": parsed["id"], "result": {}}) == b'{"id":"\\ud800x","result":{}}\n'
    assert lines.encode({"id": "é", "result": {}}) == '{"id":"é","result":{}}\n'.encode()


def test_a_number_json_cannot_carry_is_never_written() -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        lines.encode({"id": 1, "result": {"x": float("nan")}})
