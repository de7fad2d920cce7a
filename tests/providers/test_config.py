"""Provider configuration, prices, retries and the scripted provider (a test double)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from rein.errors import ConfigError
from rein.providers.base import default_registry, model_requests_allowed
from rein.providers.config import ProviderConfig, parse_providers
from rein.providers.errors import ProviderBadRequest, ProviderResponseError, ProviderUnavailable
from rein.providers.pricing import PriceTable
from rein.providers.retry import RetryPolicy, with_retries
from rein.providers.scripted import ScriptedProvider
from rein.providers.types import Completed, Message, ModelRequest, TokenUsage


def test_parse_providers_reads_the_documented_table() -> None:
    configs = parse_providers(
        {
            "openai": {
                "model": "gpt-4.1-mini",
                "prices": {"gpt-4.1-mini": {"input": 0.4, "output": 1.6}},
            },
            "local": {"kind": "openai", "base_url": "http://127.0.0.1:11434/v1", "max_attempts": 1},
            "claude": {"kind": "anthropic", "api_key_env": "WORK_CLAUDE_KEY"},
        }
    )
    assert (
        configs["openai"].kind == "openai" and configs["openai"].key_variable() == "OPENAI_API_KEY"
    )
    assert configs["openai"].prices.cost("gpt-4.1-mini", TokenUsage(input_tokens=1_000_000)) == 0.4
    assert configs["local"].retry.max_attempts == 1
    assert configs["claude"].api_key({"WORK_CLAUDE_KEY": "k"}) == "k"
    assert configs["claude"].api_key({"WORK_CLAUDE_KEY": ""}) is None


def test_a_key_in_rein_toml_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_providers({"openai": {"api_key": "sk-live-abc"}})
    assert info.value.code == "PROVCFG002"
    assert "sk-live-abc" not in str(info.value)
    assert "api_key_env" in (info.value.hint or "")


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"kind": 3}, "kind"),
        ({"api_key_env": "not a name"}, "api_key_env"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"colour": "blue"}, "unknown keys"),
        ({"prices": {"m": {"input": -1, "output": 1}}}, "input must be a number"),
    ],
)
def test_bad_provider_tables_are_config_errors(entry: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_providers({"p": entry})
    assert fragment in info.value.message


def test_config_repr_holds_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-123")
    config = ProviderConfig(name="openai", kind="openai")
    assert config.api_key() == "sk-secret-value-123"
    assert "sk-secret-value-123" not in repr(config)


def test_unknown_model_price_is_none_not_zero() -> None:
    assert PriceTable().cost("m", TokenUsage(input_tokens=10)) is None


def test_switch_values() -> None:
    assert not model_requests_allowed({"REIN_ALLOW_MODEL_REQUESTS": "0"})
    assert not model_requests_allowed({"REIN_ALLOW_MODEL_REQUESTS": "false"})
    assert model_requests_allowed({"REIN_ALLOW_MODEL_REQUESTS": "1"})
    assert model_requests_allowed({})


def test_backoff_grows_and_is_capped_with_bounded_jitter() -> None:
    policy = RetryPolicy(initial_delay=1, max_delay=5, multiplier=2, jitter=False)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1, 2, 4, 5]
    jittered = RetryPolicy(initial_delay=4, jitter=True)
    waits = [jittered.delay(1, random.Random(seed)) for seed in range(20)]
    assert all(2 <= w <= 4 for w in waits)


def test_non_transient_errors_are_not_retried() -> None:
    calls = []

    async def failing() -> None:
        calls.append(1)
        raise ProviderBadRequest("bad model")

    async def no_sleep(_: float) -> None:
        raise AssertionError("must not sleep")

    with pytest.raises(ProviderBadRequest):
        asyncio.run(with_retries(failing, policy=RetryPolicy(), sleep=no_sleep))
    assert calls == [1]


def test_transient_then_success() -> None:
    outcomes: list[object] = [ProviderUnavailable("down"), "ok"]
    retried: list[int] = []

    async def flaky() -> object:
        value = outcomes.pop(0)
        if isinstance(value, Exception):
            raise value
        return value

    async def no_wait(_: float) -> None:
        return None

    result = asyncio.run(
        with_retries(
            flaky,
            policy=RetryPolicy(jitter=False),
            sleep=no_wait,
            on_retry=lambda n, exc, wait: retried.append(n),
        )
    )
    assert result == "ok" and retried == [1]


def req(text: str = "go") -> ModelRequest:
    return ModelRequest(model="scripted", messages=(Message(role="user", content=text),))


def test_scripted_provider_plays_turns_and_records_requests() -> None:
    provider = ScriptedProvider(
        [
            {"text": "hello", "usage": {"input": 10, "output": 2}},
            lambda request: {"text": f"you said {request.messages[-1].content}"},
        ]
    )
    first = asyncio.run(provider.complete(req()))
    assert first.message.content == "hello" and first.usage.output_tokens == 2
    second = asyncio.run(provider.complete(req("again")))
    assert second.message.content == "you said again"
    assert [r.messages[-1].content for r in provider.requests] == ["go", "again"]
    with pytest.raises(ProviderResponseError) as info:
        asyncio.run(provider.complete(req()))
    assert info.value.message == "scripted: the script has no turn 3 (it has 2)"


def test_scripted_stream_ends_with_completed() -> None:
    provider = ScriptedProvider([{"tool_calls": [{"name": "read", "arguments": {"path": "a"}}]}])

    async def collect() -> list[object]:
        return [e async for e in provider.stream(req())]

    events = asyncio.run(collect())
    assert isinstance(events[-1], Completed)
    assert events[-1].response.message.tool_calls[0].arguments == {"path": "a"}
    assert events[-1].response.stop_reason == "tool_calls"


def test_scripted_from_config_loads_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps([{"text": "from file"}]))
    config = parse_providers({"fake": {"kind": "scripted", "options": {"script": str(script)}}})[
        "fake"
    ]
    provider = default_registry(plugins=False).create(config)
    assert asyncio.run(provider.complete(req())).message.content == "from file"
    with pytest.raises(ConfigError) as info:
        default_registry(plugins=False).create(ProviderConfig(name="fake", kind="scripted"))
    assert info.value.code == "PROVCFG004"
