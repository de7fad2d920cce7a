"""Codex's own JSON Schema of the app-server protocol, as ``codex app-server
generate-json-schema`` prints it (the bundle ``codex_app_server_protocol.schemas.json`` of
the version in :data:`VERSION`, committed under ``fixtures/``; ``scripts/codex-schema.sh``
writes it again). Every message rein sends is checked against it: notifications against
``ServerNotification``, server requests against ``ServerRequest``, and each response
against the result type of the request it answers."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema

VERSION = "0.163.0"
BUNDLE = (Path(__file__).parent / "fixtures" / f"codex-{VERSION}"
          / "codex_app_server_protocol.schemas.json")

__all__ = ["BUNDLE", "VERSION", "answer_errors", "client_methods", "errors", "response_type"]


@functools.cache
def bundle() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(BUNDLE.read_text())
    return loaded


def _variants(union: str) -> dict[str, dict[str, Any]]:
    return {v["properties"]["method"]["enum"][0]: v
            for v in bundle()["definitions"][union]["oneOf"]}


@functools.cache
def client_methods() -> tuple[str, ...]:
    """Every client request method Codex defines (stable, as generated without
    ``--experimental``)."""
    return tuple(_variants("ClientRequest"))


def response_type(method: str) -> str | None:
    """The definition path of the result of client request ``method`` (``v2/X``), or None
    where Codex's schema names none."""
    if method == "initialize":
        return "InitializeResponse"
    ref = _variants("ClientRequest")[method]["properties"].get("params", {}).get("$ref")
    if not isinstance(ref, str):
        return None
    path = ref.removeprefix("#/definitions/").replace("Params", "Response")
    *scope, name = path.split("/")
    where = bundle()["definitions"]
    for part in scope:
        where = where[part]
    return path if name in where else None


def answer_errors(method: str, answer: Any) -> list[str]:
    """What is wrong with a client's answer to the server request ``method``."""
    ref = _variants("ServerRequest")[method]["properties"]["params"]["$ref"]
    path = ref.removeprefix("#/definitions/").replace("Params", "Response")
    return [f"{method} answer: {w}" for w in _against(path, answer)]


def _against(path: str, body: Any) -> list[str]:
    return _against_schema({"$ref": f"#/definitions/{path}"}, body)


def _against_schema(node: Mapping[str, Any], body: Any) -> list[str]:
    schema = {"$schema": bundle()["$schema"], "definitions": bundle()["definitions"],
              "allOf": [node]}
    return [f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message[:300]}"
            for e in jsonschema.Draft7Validator(schema).iter_errors(body)]


def errors(message: Mapping[str, Any], *, answering: str | None = None) -> list[str]:
    """What is wrong with one message rein sent, by Codex's schema: a notification, a
    server request, or (``answering`` the method of the request it answers) a response."""
    if "method" in message:
        union = "ServerRequest" if "id" in message else "ServerNotification"
        variant = _variants(union).get(str(message["method"]))
        if variant is None:
            return [f"{message['method']}: not a {union} method of Codex"]
        wrong = _against_schema(variant, dict(message))
    elif "error" in message:
        return []  # an error response: JSON-RPC's shape, checked by the wire tests
    else:
        assert answering is not None, "a response needs the method it answers"
        path = response_type(answering)
        if path is None:
            return [f"{answering}: Codex's schema names no result type"]
        wrong = _against(path, message.get("result"))
    return [f"{message.get('method', answering)}: {w}" for w in wrong][:3]
