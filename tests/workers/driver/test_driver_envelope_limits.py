"""Envelope parsing holds to limits: whatever an agent sends, the answer is a refusal with a
code and a hint, never a Python exception."""

from __future__ import annotations

import json

import pytest

from rein.workers.driver.protocol import MAX_ENVELOPE_BYTES, EnvelopeRefused, parse_envelope


def refusal(text: str) -> EnvelopeRefused:
    with pytest.raises(EnvelopeRefused) as info:
        parse_envelope(text)
    assert info.value.hint
    return info.value


def test_a_100k_deep_envelope_is_refused() -> None:
    error = refusal("[" * 100_000 + "]" * 100_000)
    assert error.code == "DRIVER_ENVELOPE_LIMIT"
    assert error.message == "the envelope nests deeper than 64 levels"


def test_a_deep_object_inside_the_outputs_is_refused() -> None:
    outputs = "{}"
    for _ in range(70):
        outputs = '{"x": ' + outputs + "}"
    error = refusal('{"token": "drv-1", "outputs": ' + outputs + "}")
    assert error.code == "DRIVER_ENVELOPE_LIMIT"


def test_a_5000_digit_integer_is_refused_with_its_position() -> None:
    error = refusal('{"token": "drv-1", "attempt": ' + "1" * 5000 + "}")
    assert error.code == "DRIVER_ENVELOPE"
    assert error.message.startswith("the envelope is refused: the integer 1111")
    assert error.message.endswith("has more than 100 digits at line 1 column 31")


def test_a_number_that_overflows_to_infinity_is_refused() -> None:
    error = refusal('{"outputs": {"score": 1e999}}')
    assert "too large for a double" in error.message


def test_a_duplicate_key_is_refused_rather_than_guessed() -> None:
    # Two "status" members: parsers disagree on which one wins, so neither is taken.
    error = refusal('{"status": "failed", "status": "done"}')
    assert "duplicate key 'status'" in error.message


def test_an_envelope_over_the_size_limit_is_refused() -> None:
    text = json.dumps({"message": "x" * MAX_ENVELOPE_BYTES})
    error = refusal(text)
    assert error.code == "DRIVER_ENVELOPE_LIMIT"
    assert f"over the limit of {MAX_ENVELOPE_BYTES:,} bytes" in error.message


def test_envelopes_within_the_limits_parse_as_before() -> None:
    envelope = {"token": "drv-1", "node": "n", "attempt": 1, "status": "done",
                "outputs": {"n": 2**53 - 1, "f": 0.5, "deep": [[[[{"a": None}]]]]}}
    assert parse_envelope(json.dumps(envelope)) == envelope
