"""The one redaction pass: no known secret survives it, anything else passes unchanged."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rein.formats.redaction import (
    MIN_LENGTH,
    Secrets,
    known_secrets,
    marker,
    provider_key_variables,
    redact,
)

_secret = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=MIN_LENGTH,
                  max_size=24)
_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
_plain = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ .,:/", max_size=20)  # never a secret


def _strings(value: Any) -> Any:
    """Every string in a nested value, mapping keys included (what could carry a secret)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _json(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(_plain, inner, max_size=4),
                        max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(secrets=st.dictionaries(_name, _secret, min_size=1, max_size=4), data=st.data())
def test_no_secret_survives_anywhere_in_a_value(secrets: dict[str, str],
                                                data: st.DataObject) -> None:
    values = list(secrets.values())
    leaf = st.builds(lambda a, s, b: a + s + b, _plain, st.sampled_from(values), _plain)
    value = data.draw(_json(leaf | _plain | st.integers() | st.none() | st.booleans()))
    keyed = {data.draw(st.sampled_from(values)): value}
    texts = list(_strings(redact(keyed, Secrets.of(secrets))))
    assert not any(v in t for v in values for t in texts)


@settings(max_examples=100, deadline=None)
@given(value=_json(_plain | st.integers() | st.floats(allow_nan=False) | st.none()),
       secrets=st.dictionaries(_name, _secret, max_size=3))
def test_a_value_without_secrets_is_unchanged(value: Any, secrets: dict[str, str]) -> None:
    assert json.dumps(redact(value, Secrets.of(secrets))) == json.dumps(value)


def test_markers_name_the_secret_and_short_values_are_left_alone() -> None:
    found = known_secrets({"REIN_SECRET_DEPLOY_TOKEN": "tok-123456", "OPENAI_API_KEY": "sk-1",
                           "ANTHROPIC_API_KEY": "xyz", "OTHER": "visible-value"}, ["OTHER"])
    assert found.text("tok-123456 sk-1 xyz visible-value") == (
        "[secret:deploy_token] [secret:OPENAI_API_KEY] xyz [secret:OTHER]")
    assert marker(None) == "[secret]"
    assert Secrets.of(values=["abcd"]).text("abcd") == "[secret]"


def test_key_variables_come_from_api_key_env_or_the_kind() -> None:
    table = {"openai": {}, "claude": {"kind": "anthropic"},
             "gw": {"kind": "openai", "api_key_env": "GW_KEY"}, "local": {"kind": "scripted"},
             "broken": "not a table"}
    assert provider_key_variables(table) == ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GW_KEY")
