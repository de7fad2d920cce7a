"""The messages a protocol client receives: notifications, and questions it answers.

Both are plain values; :mod:`rein.protocol.feed` makes them from a turn's stored events, and
each surface writes them in its own framing (JSON-RPC lines for the app-server, ACP updates,
HTML for the web console, Python objects for the SDK).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen


class Notification(Frozen):
    """One server → client notification: a method name and its params."""

    method: str
    params: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "params": dict(self.params)}


class ServerRequest(Frozen):
    """A question for the client: a JSON-RPC request the server sends and waits on.

    ``id`` is the approval's id, so that an answer from anywhere (the wire, the CLI) is one
    answer; ``digest`` is the digest of what was shown, which the answer is bound to."""

    id: str
    method: str
    params: Mapping[str, Any]
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "method": self.method, "params": dict(self.params)}


Message = Notification | ServerRequest


def ms(at: str) -> int:
    """Milliseconds since the epoch of a stored ISO timestamp."""
    return int(dt.datetime.fromisoformat(at).timestamp() * 1000)


__all__ = ["Message", "Notification", "ServerRequest", "ms"]
