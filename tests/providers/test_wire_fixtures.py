"""The wire fixtures (test doubles) are checked against the official SDKs' own types."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic.types as at
import openai.types.chat as ot
import pydantic
import pytest
from support import ROOT

WIRE = ROOT / "tests" / "fixtures" / "wire"


def sse_events(path: Path) -> list[tuple[str | None, str]]:
    """(event name, data) pairs of an SSE body; a minimal reader for the check."""
    events = []
    for block in path.read_text().split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        events.append((name, "\n".join(data)))
    return events


@pytest.mark.parametrize("name", ["write_note.json", "submit_note.json"])
def test_openai_completions_match_sdk_types(name: str) -> None:
    data = json.loads((WIRE / "openai" / name).read_text())
    parsed = ot.ChatCompletion.model_validate(data)
    assert parsed.choices[0].message.tool_calls
    assert parsed.model_dump(exclude_unset=True) == data  # nothing the SDK does not know


@pytest.mark.parametrize("name", ["read_note.sse", "decide_ship.sse"])
def test_openai_stream_chunks_match_sdk_types(name: str) -> None:
    events = sse_events(WIRE / "openai" / name)
    assert events[-1] == (None, "[DONE]")
    for _, data in events[:-1]:
        chunk = ot.ChatCompletionChunk.model_validate(json.loads(data))
        assert chunk.object == "chat.completion.chunk"
    last = ot.ChatCompletionChunk.model_validate(json.loads(events[-2][1]))
    assert last.usage is not None and last.choices == []


@pytest.mark.parametrize("name", ["write_note.json", "submit_note.json"])
def test_anthropic_messages_match_sdk_types(name: str) -> None:
    data = json.loads((WIRE / "anthropic" / name).read_text())
    parsed = at.Message.model_validate(data)
    assert any(block.type == "tool_use" for block in parsed.content)


@pytest.mark.parametrize("name", ["read_note.sse", "decide_ship.sse"])
def test_anthropic_stream_events_match_sdk_types(name: str) -> None:
    adapter = pydantic.TypeAdapter(at.RawMessageStreamEvent)
    for event, data in sse_events(WIRE / "anthropic" / name):
        payload = json.loads(data)
        assert payload["type"] == event
        if event == "ping":
            continue  # keep-alive, not part of the typed union
        assert adapter.validate_python(payload).type == event


@pytest.mark.parametrize(
    "path", sorted(WIRE.glob("*/error_*.json")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_error_bodies_have_the_vendor_shape(path: Path) -> None:
    data = json.loads(path.read_text())
    assert isinstance(data["error"]["message"], str)
    if path.parent.name == "anthropic":
        assert data["type"] == "error" and data["error"]["type"].endswith("_error")
