"""The scripted provider (a test double) waits a turn's ``delay_seconds`` before it answers,
the way a slow model does; a turn without it answers at once."""

from __future__ import annotations

import asyncio

import pytest

from rein.providers import scripted
from rein.providers.scripted import ScriptedProvider
from rein.providers.types import Message, ModelRequest


def test_a_turn_waits_its_delay_then_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr(scripted.asyncio, "sleep", sleep)
    provider = ScriptedProvider([{"text": "slow", "delay_seconds": 0.25}, {"text": "quick"}])
    request = ModelRequest(model="m", messages=(Message(role="user", content="hi"),))
    first = asyncio.run(provider.complete(request))
    second = asyncio.run(provider.complete(request))
    assert (first.message.content, second.message.content) == ("slow", "quick")
    assert waited == [0.25]
