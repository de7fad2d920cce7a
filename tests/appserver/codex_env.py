"""A workspace served by ``rein app-server``, driven by the official ``openai-codex`` SDK.

The server is a real subprocess; the model is the scripted provider configured in the
workspace's ``rein.toml`` (a test double, one script per server process). Every
notification the SDK receives is recorded as the SDK coerced it: one that failed its own
pydantic model (``NOTIFICATION_MODELS[method]``) arrives as ``UnknownNotification``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

codex = pytest.importorskip("openai_codex.errors", reason="the openai-codex SDK is not installed "
                            "(scripts/codex-sdk.sh installs it)")
from openai_codex import CodexConfig
from openai_codex.client import CodexClient
from openai_codex.models import UnknownNotification

from tests.appserver.serve import environment, server_args

__all__ = ["Recorded", "client", "codex", "off_codex", "off_schema", "turn_notifications"]


class Recorded:
    """What the SDK client received, in order, and what its approval handler was asked."""

    def __init__(self) -> None:
        self.notifications: list[Any] = []
        self.raw: list[dict[str, Any]] = []  # each notification as it came off the wire
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.sent: dict[Any, str] = {}  # the client's request ids → their methods
        self.wire: list[dict[str, Any]] = []  # every message the server sent, in order

    def unknown(self) -> list[str]:
        return [n.method for n in self.notifications
                if isinstance(n.payload, UnknownNotification)]

    def methods(self) -> list[str]:
        return [n.method for n in self.notifications]


def client(root: Path, decide: Callable[[str, dict[str, Any]], dict[str, Any]],
           seen: Recorded, *, env: dict[str, str] | None = None) -> CodexClient:
    """A low-level SDK client (the only one that takes an approval handler) on rein."""
    def handler(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        seen.requests.append((method, dict(params or {})))
        return decide(method, dict(params or {}))

    c = CodexClient(CodexConfig(launch_args_override=server_args(root), cwd=str(root),
                                env={**environment(root), **(env or {})}),
                    approval_handler=handler)
    coerce = c._coerce_notification  # the SDK's own validation, recorded as it happens

    def recording(method: str, params: object) -> Any:
        notification = coerce(method, params)
        seen.notifications.append(notification)
        seen.raw.append({"method": method, "params": params})
        return notification

    c._coerce_notification = recording  # type: ignore[method-assign]
    read, write = c._read_message, c._write_message

    def reading() -> dict[str, Any]:
        message = read()
        seen.wire.append(message)
        return message

    def writing(payload: dict[str, Any]) -> None:
        if "method" in payload and "id" in payload:
            seen.sent[payload["id"]] = str(payload["method"])
        write(payload)

    c._read_message = reading  # type: ignore[method-assign]
    c._write_message = writing  # type: ignore[method-assign]
    return c


def off_codex(seen: Recorded) -> list[str]:
    """The messages rein sent that Codex's own schema refuses (every notification, server
    request and response, :mod:`tests.appserver.codex_schema`)."""
    from tests.appserver import codex_schema

    wrong: list[str] = []
    for message in seen.wire:
        answering = None if "method" in message else seen.sent.get(message.get("id"))
        if "method" not in message and answering is None:
            wrong.append(f"a response to no request: {message}")
            continue
        wrong += codex_schema.errors(message, answering=answering)
    return wrong


def turn_notifications(c: CodexClient, turn_id: str) -> Iterator[Any]:
    """The turn's notifications until ``turn/completed`` (inclusive)."""
    c.register_turn_notifications(turn_id)
    while True:
        n = c.next_turn_notification(turn_id)
        yield n
        if n.method == "turn/completed":
            return


def off_schema(seen: Recorded) -> list[str]:
    """The messages that do not match the schema rein itself publishes
    (``rein app-server generate-json-schema``: notifications and server requests), then
    those Codex's own schema refuses (:func:`off_codex`: every message)."""
    import jsonschema

    from rein.appserver.schema import files

    schemas = files()
    method_of = {v["properties"]["method"]["enum"][0]: v["properties"]["params"]
                 for v in schemas["ServerNotification.json"]["oneOf"]}
    wrong = []
    for n in seen.raw:  # each against its own method's params, for a readable error
        if n["method"] not in method_of:
            wrong.append(f"{n['method']}: not a notification rein declares")
            continue
        one = {**schemas["ServerNotification.json"], "oneOf": None,
               **method_of[n["method"]]}
        one.pop("oneOf")
        wrong += [f"{n['method']}: {e.message}" for e in
                  jsonschema.Draft7Validator(one).iter_errors(n["params"])][:1]
    for method, params in seen.requests:
        message = {"id": "x", "method": method, "params": params}
        wrong += [f"{method}: {e.message}" for e in jsonschema.Draft7Validator(
            schemas["ServerRequest.json"]).iter_errors(message)][:1]
    return wrong + off_codex(seen)
