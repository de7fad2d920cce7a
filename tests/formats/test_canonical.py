"""RFC 8785 canonical JSON and the two digest forms."""

from __future__ import annotations

import ags
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from rein.errors import DocumentError
from rein.formats.canonical import ags_digest, canonical_json, oap_digest

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_equals_the_reference_implementation(value: object) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value,expected",
    [
        (1.0, b"1"), (1e21, b"1e+21"), (1e-7, b"1e-7"), (0.00011, b"0.00011"), (-0.0, b"0"),
        ({"b": 1, "a": [True, None]}, b'{"a":[true,null],"b":1}'),
        ({"\U0001f600": 1, "\uffff": 2}, '{"\U0001f600":1,"\uffff":2}'.encode()),
        ("\u2028\x01", '"\u2028\\u0001"'.encode()),
    ],
)
def test_known_forms(value: object, expected: bytes) -> None:
    assert canonical_json(value) == expected


def test_digest_forms_match_the_packages() -> None:
    doc = {"ags_version": "1.0", "kind": "AgenticGraph", "n": [1, 2.5, "x"]}
    assert ags_digest(doc) == ags.graph_digest(doc)
    assert ags_digest(doc).startswith("sha256-")
    assert oap_digest(doc).startswith("sha256:") and len(oap_digest(doc)) == 7 + 64


def test_no_canonical_form_is_an_error_not_a_crash() -> None:
    with pytest.raises(DocumentError):
        canonical_json({"a": float("nan")})
    with pytest.raises(DocumentError):
        canonical_json(2**60)
