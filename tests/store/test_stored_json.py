"""The JSON the store writes: one encoder built once, byte for byte what
``json.dumps(..., ensure_ascii=False, separators=(",", ":"), sort_keys=True)`` writes, with
the same errors, a failure part-way leaving nothing behind for the next value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rein.store.sql import dump


def _reference(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


VALUES: list[Any] = [
    "plain", "é\u2028\x00\"\\", 0, -1, 10**30, 1.5, -0.0, 1e-7, float("inf"), float("nan"),
    None, True, False, [], {}, [1, [2, [3]]], (1, 2),
    {"b": {"d": 1, "c": [None, "ü"]}, "a": 2.0, "": "empty key"},
    {"node": "n1", "status": "succeeded", "outputs": {"decision": "odd"}, "attempts": 1},
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_stored_json_is_the_reference_encoding(value: Any) -> None:
    assert dump(value) == _reference(value)


def _outcome(encode: Any, value: Any) -> tuple[str, str]:
    try:
        return ("ok", encode(value))
    except (TypeError, ValueError) as exc:
        return (type(exc).__name__, str(exc))


def test_what_cannot_be_encoded_fails_as_the_reference_does_and_leaves_nothing_behind() -> None:
    loop: list[Any] = []
    loop.append(loop)
    for bad in (loop, {"x": object()}, {1: "a", "b": 2}):
        assert _outcome(dump, bad) == _outcome(_reference, bad)
    # A value that failed part-way, mended, encodes: the encoder does not remember it as
    # one it was inside (which would call it circular).
    box: dict[str, Any] = {"items": [{"v": object()}]}
    assert _outcome(dump, box)[0] == "TypeError"
    box["items"][0]["v"] = 1
    assert dump(box) == '{"items":[{"v":1}]}'
