"""One suite for both SDK providers, replaying wire fixtures through the official SDKs."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from rein.providers.anthropic_messages import AnthropicProvider
from rein.providers.base import default_registry
from rein.providers.config import ProviderConfig
from rein.providers.errors import (
    ModelRequestsBlocked,
    ProviderAuthError,
    ProviderRateLimited,
    ProviderUnavailable,
)
from rein.providers.openai_chat import OpenAIChatProvider
from rein.providers.pricing import Price, PriceTable
from rein.providers.replay import WireReplay
from rein.providers.retry import RetryPolicy
from rein.providers.types import (
    Completed,
    Message,
    ModelRequest,
    ModelToolCall,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)

WIRE = ROOT / "tests" / "fixtures" / "wire"
KEYS = {
    "OPENAI_API_KEY": "sk-test-rein-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-test-rein-0123456789abcdef",
}
MODELS = {"openai": "gpt-4.1-mini-2025-04-14", "anthropic": "claude-sonnet-4-6"}
CLASSES: dict[str, Any] = {"openai": OpenAIChatProvider, "anthropic": AnthropicProvider}
KINDS = ["openai", "anthropic"]


class Sleeps:
    """Records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def provider(
    kind: str,
    files: list[Any],
    *,
    prices: PriceTable | None = None,
    sleep: Sleeps | None = None,
    attempts: int = 3,
):  # type: ignore[no-untyped-def]
    replay = WireReplay.from_files([f if isinstance(f, tuple) else WIRE / kind / f for f in files])
    config = ProviderConfig(
        name=kind,
        kind=kind,
        prices=prices or PriceTable(),
        retry=RetryPolicy(max_attempts=attempts, jitter=False),
    )
    cls = CLASSES[kind]
    return cls(config, http_client=replay.client(), environ=KEYS, sleep=sleep or Sleeps()), replay


def request(kind: str, *messages: Message) -> ModelRequest:
    return ModelRequest(
        model=MODELS[kind],
        system="You are a careful worker.",
        messages=messages or (Message(role="user", content="Write NOTE.md."),),
        tools=(
            ToolSpec(
                name="file_write",
                description="write a file",
                parameters={"type": "object", "properties": {"path": {"type": "string"}}},
            ),
        ),
    )


@pytest.mark.parametrize("kind", KINDS)
def test_complete_returns_the_tool_call(kind: str) -> None:
    p, _ = provider(kind, ["write_note.json"])
    response = asyncio.run(p.complete(request(kind)))
    (call,) = response.message.tool_calls
    assert call.name == "file_write"
    assert call.arguments == {"path": "NOTE.md", "content": "# Note\n\nrein was here.\n"}
    assert response.stop_reason == "tool_calls"
    assert response.model == MODELS[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_stream_yields_deltas_then_the_authoritative_response(kind: str) -> None:
    p, _ = provider(kind, ["decide_ship.sse"])

    async def collect() -> list[Any]:
        return [e async for e in p.stream(request(kind))]

    events = asyncio.run(collect())
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    args = "".join(e.arguments for e in events if isinstance(e, ToolCallDelta))
    assert text == "The note looks complete."
    assert args == '{"decision": "ship", "reason": "NOTE.md has a heading and a body."}'
    assert isinstance(events[-1], Completed)
    final = events[-1].response
    assert final.message.content == text
    assert final.message.tool_calls[0].arguments == {
        "decision": "ship",
        "reason": "NOTE.md has a heading and a body.",
    }
    assert final.usage.output_tokens in (41, 52)


def test_usage_and_cost_are_accounted_with_cached_tokens() -> None:
    prices = PriceTable(prices={MODELS["openai"]: Price(input=0.4, output=1.6, cached_input=0.1)})
    p, _ = provider("openai", ["submit_note.json"], prices=prices)
    response = asyncio.run(p.complete(request("openai")))
    assert (
        response.usage.input_tokens,
        response.usage.cached_input_tokens,
        response.usage.output_tokens,
    ) == (470, 384, 29)
    expected = ((470 - 384) * 0.4 + 384 * 0.1 + 29 * 1.6) / 1_000_000
    assert response.cost_usd == pytest.approx(expected)


def test_anthropic_cache_reads_count_as_input() -> None:
    p, _ = provider("anthropic", ["submit_note.json"])
    response = asyncio.run(p.complete(request("anthropic")))
    assert (response.usage.input_tokens, response.usage.cached_input_tokens) == (600, 480)
    assert response.cost_usd is None  # no price configured: unknown, not free


@pytest.mark.parametrize("kind", KINDS)
def test_tool_results_are_sent_back_in_the_vendor_shape(kind: str) -> None:
    p, replay = provider(kind, ["submit_note.json"])
    call = ModelToolCall(
        id="call_1",
        name="file_write",
        arguments={"path": "NOTE.md"},
        raw_arguments='{"path": "NOTE.md"}',
    )
    asyncio.run(
        p.complete(
            request(
                kind,
                Message(role="user", content="Write NOTE.md."),
                Message(role="assistant", content="", tool_calls=(call,)),
                Message(role="tool", tool_call_id="call_1", content="created NOTE.md (7 bytes)"),
            )
        )
    )
    body = replay.bodies()[0]
    if kind == "openai":
        assert body["messages"][0] == {"role": "system", "content": "You are a careful worker."}
        assert body["messages"][2]["tool_calls"][0]["function"] == {
            "name": "file_write",
            "arguments": '{"path": "NOTE.md"}',
        }
        assert body["messages"][3] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "created NOTE.md (7 bytes)",
        }
        assert body["tools"][0]["type"] == "function"
    else:
        assert body["system"] == "You are a careful worker."
        assert body["messages"][1]["content"] == [
            {"type": "tool_use", "id": "call_1", "name": "file_write", "input": {"path": "NOTE.md"}}
        ]
        assert body["messages"][2] == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": "created NOTE.md (7 bytes)",
                    "is_error": False,
                }
            ],
        }
        assert body["tools"][0]["input_schema"]["type"] == "object"


@pytest.mark.parametrize(("kind", "status"), [("openai", 429), ("anthropic", 529)])
def test_transient_errors_are_retried_with_backoff(kind: str, status: int) -> None:
    sleeps = Sleeps()
    error = WIRE / kind / f"error_{429 if kind == 'openai' else 529}.json"
    p, replay = provider(kind, [(error, status), (error, status), "write_note.json"], sleep=sleeps)
    response = asyncio.run(p.complete(request(kind)))
    assert response.message.tool_calls[0].name == "file_write"
    assert sleeps.waits == [1.0, 2.0]  # exponential, no jitter in this policy
    assert len(replay.requests) == 3


def test_retries_stop_at_max_attempts_with_a_transient_error() -> None:
    error = WIRE / "openai" / "error_500.json"
    p, replay = provider("openai", [(error, 500)] * 3, attempts=2)
    with pytest.raises(ProviderUnavailable) as info:
        asyncio.run(p.complete(request("openai")))
    assert info.value.code == "PRV003" and info.value.failure_class == "transient"
    assert "HTTP 500" in info.value.message
    assert isinstance(info.value.__cause__, Exception)  # raised from the vendor's exception
    assert len(replay.requests) == 2


def test_rate_limit_class_and_code() -> None:
    error = WIRE / "anthropic" / "error_429.json"
    p, _ = provider("anthropic", [(error, 429)], attempts=1)
    with pytest.raises(ProviderRateLimited) as info:
        asyncio.run(p.complete(request("anthropic")))
    assert info.value.code == "PRV002"


@pytest.mark.parametrize("kind", KINDS)
def test_auth_error_never_shows_the_key(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key = KEYS[f"{kind.upper()}_API_KEY"]
    p, replay = provider(kind, [(WIRE / kind / "error_401.json", 401)])
    with pytest.raises(ProviderAuthError) as info:
        asyncio.run(p.complete(request(kind)))
    # The key did go on the wire (that is its job)...
    sent = replay.requests[0].headers
    assert key in (sent.get("authorization", "") + sent.get("x-api-key", ""))
    # ...and nowhere else: not in the error, its JSON, the repr, or any log record.
    err = info.value
    assert err.code == "PRV001"
    assert key not in str(err) and key not in repr(err.to_json()) and key not in repr(p)
    assert "[secret]" in err.message
    assert key not in caplog.text


@pytest.mark.parametrize("kind", KINDS)
def test_switch_blocks_real_calls_but_not_replays(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REIN_ALLOW_MODEL_REQUESTS", "0")
    real = CLASSES[kind](ProviderConfig(name=kind, kind=kind), environ=KEYS)
    with pytest.raises(ModelRequestsBlocked) as info:
        asyncio.run(real.complete(request(kind)))
    assert info.value.code == "PRV010"
    replayed, _ = provider(kind, ["write_note.json"])
    assert asyncio.run(replayed.complete(request(kind))).message.tool_calls


def test_missing_key_is_a_clear_auth_error(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = WireReplay.from_files([])
    p = AnthropicProvider(
        ProviderConfig(name="claude", kind="anthropic", api_key_env="MY_CLAUDE_KEY"),
        http_client=replay.client(),
        environ={},
    )
    with pytest.raises(ProviderAuthError) as info:
        asyncio.run(p.complete(request("anthropic")))
    assert info.value.message == "claude: no API key: MY_CLAUDE_KEY is not set"
    assert replay.requests == []


def test_local_openai_compatible_server_needs_no_key() -> None:
    replay = WireReplay.from_files([WIRE / "openai" / "write_note.json"])
    config = ProviderConfig(name="ollama", kind="openai", base_url="http://127.0.0.1:11434/v1")
    p = OpenAIChatProvider(config, http_client=replay.client(), environ={})
    req = ModelRequest(
        model="qwen2.5-coder:7b",
        messages=(Message(role="user", content="hi"),),
        max_output_tokens=64,
    )
    asyncio.run(p.complete(req))
    assert str(replay.requests[0].url) == "http://127.0.0.1:11434/v1/chat/completions"
    assert replay.bodies()[0]["max_tokens"] == 64  # compatible servers know max_tokens


def test_registry_builds_each_kind_and_names_the_valid_ones() -> None:
    registry = default_registry(plugins=False)
    assert registry.kinds() == ("anthropic", "openai", "scripted")
    built = registry.create(ProviderConfig(name="o", kind="openai", base_url="http://x/v1"))
    assert built.capabilities.tool_calling and built.capabilities.streaming
    from rein.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        registry.create(ProviderConfig(name="x", kind="gemini"))
    assert info.value.code == "PROVCFG003" and "anthropic, openai, scripted" in (
        info.value.hint or ""
    )


def test_malformed_tool_arguments_are_kept_with_the_parse_error() -> None:
    call = ModelToolCall.from_json_text(id="1", name="t", text='{"path": ')
    assert call.arguments == {} and call.parse_error and call.raw_arguments == '{"path": '
    assert ModelToolCall.from_json_text(id="1", name="t", text="[1]").parse_error == (
        "arguments must be a JSON object"
    )


def test_fixture_dir_exists() -> None:
    assert isinstance(WIRE, Path) and (WIRE / "README.md").is_file()


def test_a_response_without_usage_is_unmeasured_not_free(tmp_path: Path) -> None:
    """An OpenAI-compatible server may leave ``usage`` out: no count, so no cost."""
    import json

    data = json.loads((WIRE / "openai" / "submit_note.json").read_text())
    del data["usage"]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(data))
    prices = PriceTable(prices={MODELS["openai"]: Price(input=0.4, output=1.6)})
    p, _ = provider("openai", [bare], prices=prices)
    response = asyncio.run(p.complete(request("openai")))
    assert response.usage.reported is False
    assert response.cost_usd is None  # priced, but nothing to price
    p, _ = provider("openai", ["submit_note.json"], prices=prices)
    assert asyncio.run(p.complete(request("openai"))).usage.reported is True


def test_a_stream_without_its_usage_chunk_is_unmeasured(tmp_path: Path) -> None:
    blocks = (WIRE / "openai" / "decide_ship.sse").read_text().split("\n\n")
    kept = [b for b in blocks if '"usage": {' not in b and '"usage":{' not in b]
    assert len(kept) == len(blocks) - 1  # the last chunk, with usage and no choices
    bare = tmp_path / "bare.sse"
    bare.write_text("\n\n".join(kept))
    p, _ = provider("openai", [bare])

    async def collect() -> list[Any]:
        return [e async for e in p.stream(request("openai"))]

    final = asyncio.run(collect())[-1]
    assert isinstance(final, Completed) and final.response.usage.reported is False
