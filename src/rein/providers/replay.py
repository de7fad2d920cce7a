"""Wire replay: a **test double** that answers HTTP requests with recorded response bodies.

The official SDKs are driven for real (request building, SSE parsing, typed responses); only
the network is replaced, by an ``httpx2.MockTransport`` that serves the given bodies in order
and keeps every request. A provider built with this client is not a real model call, so the
``REIN_ALLOW_MODEL_REQUESTS=0`` switch lets it through.

    replay = WireReplay.from_files([FIXTURES / "openai" / "write_note.json"])
    provider = OpenAIChatProvider(config, http_client=replay.client())

Bodies ending in ``.sse`` are served as ``text/event-stream``, others as JSON; the status
defaults to 200 and can be given per file as ``(path, status)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx2 as httpx

from rein.core.frozen import Frozen, field


class Recorded(Frozen):
    """One response to serve."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    name: str = ""  # the fixture it came from, for messages


class WireReplay:
    """Serves recorded responses in order; keeps the requests (a test double)."""

    def __init__(self, responses: Iterable[Recorded]) -> None:
        self._responses = list(responses)
        self.requests: list[httpx.Request] = []

    @classmethod
    def from_files(cls, files: Iterable[Path | tuple[Path, int]]) -> WireReplay:
        out = []
        for item in files:
            path, status = item if isinstance(item, tuple) else (item, 200)
            kind = "text/event-stream" if path.suffix == ".sse" else "application/json"
            out.append(
                Recorded(body=path.read_bytes(), status=status, content_type=kind, name=path.name)
            )
        return cls(out)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        index = len(self.requests) - 1
        if index >= len(self._responses):
            return httpx.Response(
                599, json={"error": {"message": f"wire replay has no response {index + 1}"}}
            )
        rec = self._responses[index]
        headers = {"content-type": rec.content_type, **rec.headers}
        return httpx.Response(rec.status, content=rec.body, headers=headers)

    def client(self) -> httpx.AsyncClient:
        """An async client whose transport is this replay."""
        return httpx.AsyncClient(transport=httpx.MockTransport(self))

    def bodies(self) -> list[Any]:
        """The JSON bodies of the requests received, in order."""
        return [json.loads(r.content) if r.content else None for r in self.requests]

    @property
    def remaining(self) -> int:
        return len(self._responses) - len(self.requests)
