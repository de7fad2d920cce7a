"""Layer 1: the AGS 1.0 JSON Schema, and the version gate (AG001–AG004, AG101–AG104, AG002).

The schema comes from the installed ``agentic-graph-spec`` package and is compiled once per
process with ``jsonschema_rs`` (the pure-Python validator takes seconds on large graphs).

Schema failures are mapped to catalogue codes by *which rule of the schema* failed, not by
the wording of the message:

* ``additionalProperties`` → AG003, ``enum`` (and anything wrong with ``intelligence.tier``)
  → AG004, the edge rule forbidding ``when`` on sequence edges → AG103;
* the node rules "a type block only with its type" → AG101, "no intelligence on a gate" →
  AG102, and the input rule "at most one of from/template/value" → AG104. The reference
  validator reports these three as AG001; the catalogue gives them their own codes;
* everything else → AG001.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from rein.formats.ags.report import Collector
from rein.formats.pointers import pointer

SUPPORTED_MAJOR = 1
SUPPORTED_MINOR = 0
_SCHEMA_FILE = "agentic-graph-1.0.schema.json"
_NODE_BLOCK_RULES = {1: "loop", 2: "map", 3: "subgraph", 4: "gate", 5: "decision"}
_VERSION = re.compile(r"(\d+)\.(\d+)")


@cache
def schema_document() -> dict[str, Any]:
    """The normative AGS 1.0 JSON Schema, as shipped by the ``agentic-graph-spec`` package."""
    # The package's folder from its import spec, not importlib.resources: that one imports
    # tempfile, zipfile and the compression modules, which reading one file does not need.
    spec = find_spec("ags")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the agentic-graph-spec package (module ags) is missing")
    folder = Path(next(iter(spec.submodule_search_locations)))
    text = (folder / "schema" / _SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)  # the shipped schema is one JSON object
    return schema


@cache
def _validator() -> Any:
    import jsonschema_rs  # imported here: the CLI must start fast when it does not validate

    return jsonschema_rs.Draft202012Validator(schema_document())


def check_schema(data: Any, out: Collector) -> bool:
    """Report every schema failure; return whether the document satisfied the schema."""
    validator = _validator()
    if validator.is_valid(data):
        return True
    for error in validator.iter_errors(data):
        path = list(error.instance_path)
        code, message = _classify(error, path, data)
        hint = None  # the catalogue's fix, unless a nearer name can lead it
        if code == "AG003":
            hint = _field_hint(error)
        elif code == "AG004":
            hint = _value_hint(error)
        out.add(code, pointer(*path), message, hint=hint)
    return False


def _value_hint(error: Any) -> str | None:
    """For a value outside an enumeration (``type: gaet``), the allowed value it was
    probably meant to be, followed by the catalogue's fix."""
    options = getattr(error.kind, "options", None)
    if not isinstance(error.instance, str) or not isinstance(options, list):
        return None
    from rein.formats.ags.report import near

    return near("AG004", error.instance, [o for o in options if isinstance(o, str)])


def _field_hint(error: Any) -> str | None:
    """For an unknown field, the field of that object it was probably meant to be
    (``path`` on an output → ``path_hint``), followed by the catalogue's fix."""
    from rein.core.suggest import did_you_mean
    from rein.formats.ags.codes import CODES

    rule: Any = schema_document()
    for step in list(error.schema_path)[:-1]:  # the object that holds additionalProperties
        rule = rule.get(step) if isinstance(rule, dict) else None
    known = list((rule or {}).get("properties") or {}) if isinstance(rule, dict) else []
    tips = [f"{field!r}: {tip}" if len(error.kind.unexpected) > 1 else tip
            for field in error.kind.unexpected
            if (tip := did_you_mean(str(field), known)) is not None]
    if not tips:
        return None
    return "; ".join(tips) + f" (otherwise {CODES['AG003'].hint})"


def check_version(data: dict[str, Any], out: Collector) -> None:
    """AG002: fail closed on any ``ags_version`` other than the 1.0 rein implements."""
    raw = data.get("ags_version")
    where = "/ags_version" if "ags_version" in data else ""
    match = _VERSION.fullmatch(raw) if isinstance(raw, str) else None
    if match is None:
        shown = "missing" if raw is None and "ags_version" not in data else repr(raw)
        out.add("AG002", where, f"ags_version is {shown}; expected \"1.0\"")
        return
    major, minor = int(match.group(1)), int(match.group(2))
    if major != SUPPORTED_MAJOR:
        out.add("AG002", where,
                f"ags_version {raw} is major version {major}; rein implements AGS 1.x only")
    elif minor > SUPPORTED_MINOR:
        out.add("AG002", where,
                f"ags_version {raw} is newer than the 1.{SUPPORTED_MINOR} rein implements; "
                "newer minor versions fail closed")


# ---------------------------------------------------------------------------- mapping


def _classify(error: Any, path: list[Any], data: Any) -> tuple[str, str]:
    kind = error.kind
    name = type(kind).__name__
    rule = list(error.schema_path)
    where = _where(path)
    if name == "AdditionalProperties":
        fields = ", ".join(repr(f) for f in kind.unexpected)
        plural = "s" if len(kind.unexpected) > 1 else ""
        return "AG003", f"unknown field{plural} {fields} in {where}"
    if name == "Enum":
        return "AG004", f"{_show(error.instance)} is not allowed in {where}; use one of " \
            + ", ".join(_show(o) for o in kind.options)
    if len(path) >= 2 and path[-2:] == ["intelligence", "tier"]:
        return "AG004", (f"{_show(error.instance)} is not a tier; use one of minimal, "
                         "standard, advanced, frontier")
    defs = rule[1] if len(rule) > 1 and rule[0] == "$defs" else None
    if name == "Not" and defs == "edge":
        return "AG103", (f"{where} is a sequence edge and declares when; only conditional "
                         "and on_failure edges take a guard")
    if name == "Not" and defs == "input_spec":
        present = [k for k in ("from", "template", "value")
                   if isinstance(error.instance, dict) and k in error.instance]
        return "AG104", (f"{where} declares {' and '.join(present)}; an input takes at most "
                         "one of from, template and value")
    if name == "Not" and defs == "node" and len(rule) > 3 and rule[2] == "allOf":
        index = rule[3]
        node = error.instance if isinstance(error.instance, dict) else {}
        node_type = node.get("type", "task")
        if index in _NODE_BLOCK_RULES:
            block = _NODE_BLOCK_RULES[index]
            return "AG101", f"{where} has type {node_type!r} but declares a {block!r} block"
        if index == 6:
            return "AG102", (f"{where} is a gate and declares intelligence; gates never "
                             "call a model")
    return "AG001", _generic(name, kind, error, where)


def _generic(name: str, kind: Any, error: Any, where: str) -> str:
    if name == "Required":
        return f"{where} is missing the required field {kind.property!r}"
    if name == "Type":
        types = kind.types if isinstance(kind.types, list) else [kind.types]
        wanted = " or ".join(str(t) for t in types)
        return f"{where} must be {_article(wanted)}, not {_json_type(error.instance)}"
    if name == "Constant":
        return f"{where} must be {_show(kind.expected_value)}, not {_show(error.instance)}"
    if name == "Pattern":
        return f"{where} is {_show(error.instance)}, which does not match {kind.pattern}"
    if name == "PropertyNames":
        return f"{where} has a key that is not a valid name: {_short(error.message)}"
    if name == "OneOfNotValid":
        return f"{where} matches none of the allowed shapes ({_oneof_hint(error)})"
    if name == "OneOfMultipleValid":
        return f"{where} matches more than one allowed shape ({_oneof_hint(error)})"
    return f"{where}: {_short(error.message)}"


def _oneof_hint(error: Any) -> str:
    rule = list(error.schema_path)
    block = rule[1] if len(rule) > 1 else ""
    if block in ("loop_block", "map_block"):
        return "exactly one of body or use"
    if block == "subgraph_block":
        return "exactly one of use, inline or ref"
    return "see the schema"


def _where(path: list[Any]) -> str:
    if not path:
        return "the document"
    return "/" + "/".join(str(p) for p in path)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _article(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return _json_type(value)
    return _short(json.dumps(value, ensure_ascii=False))


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
