"""``rein app-server generate-json-schema``: JSON Schema (draft-07) of what rein speaks.

Written from the wire types of :mod:`rein.protocol.shapes` and ``.requests``, the same ones the
feed's shapes are checked against: one file per params, result and notification type,
plus ``ServerNotification.json``, ``ServerRequest.json`` and ``ClientRequest.json`` (the
unions by method), each self-contained (its ``definitions`` inline). Deterministic, so the
committed copy (``docs/app-server-schema/``) is compared with a fresh one in the tests.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NotRequired, Union, get_args, get_origin, get_type_hints

from rein.protocol import requests, shapes

DRAFT = "http://json-schema.org/draft-07/schema#"


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


class _Builder:
    """Turns types into schema nodes, collecting the TypedDicts they name as definitions."""

    def __init__(self) -> None:
        self.definitions: dict[str, Any] = {}

    def node(self, tp: Any) -> dict[str, Any]:
        origin, args = get_origin(tp), get_args(tp)
        if tp is Any:
            return {}
        if tp is type(None) or tp is None:
            return {"type": "null"}
        if tp is str:
            return {"type": "string"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if origin is Literal:
            return {"enum": list(args)}
        if origin in (Union, types.UnionType):
            return {"anyOf": [self.node(a) for a in args]}
        if origin is list:
            return {"type": "array", "items": self.node(args[0])}
        if origin is dict:
            return {"type": "object", "additionalProperties": self.node(args[1])}
        if _is_typeddict(tp):
            self.define(tp)
            return {"$ref": f"#/definitions/{tp.__name__}"}
        raise TypeError(f"no schema for {tp!r}")

    def define(self, tp: type) -> None:
        if tp.__name__ in self.definitions:
            return
        self.definitions[tp.__name__] = {}  # placeholder: a type may refer to itself
        self.definitions[tp.__name__] = self.object(tp)

    def object(self, tp: type) -> dict[str, Any]:
        hints = get_type_hints(tp, include_extras=True)
        # Not ``__required_keys__``: with postponed annotations Python 3.11 cannot see a
        # NotRequired there, so the hints decide.
        total = bool(getattr(tp, "__total__", True))
        required = []
        props = {}
        for name, hint in hints.items():
            if get_origin(hint) is NotRequired:
                hint = get_args(hint)[0]
            elif total:
                required.append(name)
            props[name] = self.node(hint)
        required.sort()
        out: dict[str, Any] = {"title": tp.__name__, "type": "object", "properties": props}
        if required:
            out["required"] = required
        if tp.__doc__ and not tp.__doc__.startswith(tp.__name__ + "("):
            out["description"] = " ".join(tp.__doc__.split())
        return out


def schema_of(tp: type) -> dict[str, Any]:
    """A self-contained schema for one TypedDict."""
    builder = _Builder()
    body = builder.object(tp)
    builder.definitions.pop(tp.__name__, None)
    return {"$schema": DRAFT, **body,
            **({"definitions": dict(sorted(builder.definitions.items()))}
               if builder.definitions else {})}


def union(title: str, methods: Mapping[str, type], *, request: bool) -> dict[str, Any]:
    """The messages of several methods as one schema, tagged by ``method``."""
    builder = _Builder()
    variants = []
    for method, params in methods.items():
        props: dict[str, Any] = {"method": {"enum": [method]}, "params": builder.node(params)}
        required = ["method", "params"]
        if request:
            props["id"] = {"type": ["string", "integer"]}
            required.insert(0, "id")
        variants.append({"type": "object", "properties": props, "required": required})
    return {"$schema": DRAFT, "title": title, "oneOf": variants,
            "definitions": dict(sorted(builder.definitions.items()))}


def files() -> dict[str, dict[str, Any]]:
    """Every file the command writes, by name."""
    out: dict[str, dict[str, Any]] = {}
    for params, result in (*requests.CLIENT_REQUESTS.values(),
                           *requests.SERVER_REQUESTS.values()):
        for tp in (params, result):
            out.setdefault(f"{tp.__name__}.json", schema_of(tp))
    for tp in shapes.NOTIFICATIONS.values():
        out.setdefault(f"{tp.__name__}.json", schema_of(tp))
    out["ServerNotification.json"] = union("ServerNotification", shapes.NOTIFICATIONS,
                                           request=False)
    out["ServerRequest.json"] = union(
        "ServerRequest", {m: p for m, (p, _) in requests.SERVER_REQUESTS.items()}, request=True)
    out["ClientRequest.json"] = union(
        "ClientRequest", {m: p for m, (p, _) in requests.CLIENT_REQUESTS.items()}, request=True)
    return dict(sorted(out.items()))


def write(out: Path) -> list[Path]:
    """Write every file under ``out`` (created); the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, body in files().items():
        path = out / name
        path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.append(path)
    return written

