"""The normative OAP 1.0 JSON Schemas, read from the installed ``open-agent-profile`` package.

rein keeps no copy: the schemas are loaded at run time and compiled once per process with
``jsonschema_rs`` (draft 2020-12, ``format`` enforced, so ``updated_at: yesterday`` is an
error, which the reference validator lets through).
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from typing import Any

import jsonschema_rs

from rein.core.frozen import Frozen
from rein.errors import DocumentError

SCHEMA_FILES = {
    "AgentProfile": "schema/v1/agent-profile.schema.json",
    "AgentStateDelta": "schema/v1/agent-state-delta.schema.json",
}


class SchemaError(Frozen):
    """One schema violation: where (JSON Pointer) and what."""

    pointer: str
    message: str
    keyword: str
    hint: str | None = None


@functools.cache
def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema of an OAP ``kind`` as shipped by the ``oap`` package."""
    try:
        resource = importlib.resources.files("oap").joinpath(SCHEMA_FILES[kind])
        schema: dict[str, Any] = json.loads(resource.read_text(encoding="utf-8"))
        return schema
    except (ModuleNotFoundError, FileNotFoundError, KeyError) as exc:  # pragma: no cover
        raise DocumentError(
            f"the OAP schema for {kind!r} is not available: {exc}", code="OAP000",
            hint="install rein's dependencies (the open-agent-profile package)",
        ) from None


@functools.cache
def _validator(kind: str) -> Any:
    return jsonschema_rs.Draft202012Validator(schema_for(kind), validate_formats=True)


def _escape(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def schema_errors(kind: str, data: Any) -> list[SchemaError]:
    """Every schema violation of ``data`` as ``kind``, sorted by pointer."""
    out = []
    for error in _validator(kind).iter_errors(data):
        pointer = "".join("/" + _escape(t) for t in error.instance_path)
        keyword = type(error.kind).__name__.lower()
        hint = None
        if keyword == "additionalproperties":
            hint = _unexpected_hint(kind, list(getattr(error.kind, "unexpected", ())))
        out.append(SchemaError(pointer=pointer, message=error.message, keyword=keyword,
                               hint=hint))
    out.sort(key=lambda e: (e.pointer, e.message))
    return out


def _unexpected_hint(kind: str, keys: list[str]) -> str:
    """Where each unexpected key is allowed, when the schema has it elsewhere: the usual
    mistake is a key one level off (``spec.memory.writeback`` for ``spec.lifecycle``)."""
    parts = []
    for key in keys:
        homes = key_homes(kind, key)
        if homes:
            parts.append(f"{key!r} belongs under {' or '.join(homes)}")
    where = "; ".join(parts) + "; " if parts else "remove it; "
    return where + "harness-specific data goes in metadata.annotations (string values)"


@functools.cache
def key_homes(kind: str, key: str) -> tuple[str, ...]:
    """The JSON Pointers of the objects whose schema declares property ``key`` (``/*`` for
    an array item), shallowest first, at most three."""
    schema = schema_for(kind)
    defs = schema.get("$defs", {})
    found: list[str] = []

    def walk(node: Any, path: str, seen: frozenset[str]) -> None:
        if not isinstance(node, dict) or path.count("/") > 8:
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
            walk(defs.get(ref.removeprefix("#/$defs/")), path, seen | {ref})
        properties = node.get("properties") or {}
        if key in properties and path not in found:
            found.append(path or "/")
        for name, sub in properties.items():
            walk(sub, f"{path}/{name}", seen)
        for sub in (node.get("items"), node.get("additionalProperties")):
            walk(sub, f"{path}/*", seen)
        for combined in ("allOf", "anyOf", "oneOf"):
            for sub in node.get(combined) or ():
                walk(sub, path, seen)

    walk(schema, "", frozenset())
    return tuple(sorted(found, key=lambda p: (p.count("/"), p))[:3])
