"""Binding a run's parameters (AGS §5.2): the command line and a file, checked against the specs.

``--param NAME=VALUE`` is coerced to the declared type: string-like types take the text as
is, everything else is parsed as JSON (``--param retries=3``, ``--param tags='["a"]'``).
``--params FILE`` reads YAML or JSON. A value given on the command line wins over the file.
Missing required values without a default are AG301; values that do not fit their type,
``enum`` or ``schema`` are AG302. Every problem is reported at once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.errors import ConfigError, Finding, Location, ReinError
from rein.formats.loader import load_path

STRING_TYPES = frozenset({"string", "text", "markdown", "file", "directory", "reference"})


class ParamsError(ReinError):
    """The supplied parameters do not satisfy the graph's declarations (AG301/AG302)."""

    default_code = "AG302"

    def __init__(self, findings: Sequence[Finding]) -> None:
        first = findings[0]
        super().__init__(
            "; ".join(f"{f.code}: {f.message}" for f in findings),
            code=first.code,
            hint=first.hint,
            location=first.location,
        )
        self.findings = tuple(findings)


def parse_assignments(pairs: Sequence[str]) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` → ``{"a": "1", "b": "x=y"}``; a pair without ``=`` is a usage error."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(
                f"--param {pair!r} is not NAME=VALUE",
                code="PARAM001",
                hint="write --param name=value (JSON for numbers, booleans, arrays, objects)",
            )
        out[name.strip()] = value
    return out


def read_params_file(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML or JSON params file."""
    doc = load_path(path)
    if not isinstance(doc.data, Mapping):
        raise ConfigError(
            f"{path}: a params file must hold one mapping of name → value",
            code="PARAM002",
            location=Location(file=str(path)),
        )
    return dict(doc.data)


def coerce(text: str, spec: Mapping[str, Any]) -> Any:
    """A command-line value as the declared type wants it; JSON for non-string types."""
    if spec.get("type", "string") in STRING_TYPES:
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # left as text; the type check reports it as AG302


def _fits_type(value: Any, kind: str) -> bool:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    match kind:
        case "string" | "text" | "markdown" | "file" | "directory" | "reference":
            return isinstance(value, str)
        case "number":
            return number
        case "integer":
            return number and float(value).is_integer()
        case "boolean":
            return isinstance(value, bool)
        case "object":
            return isinstance(value, Mapping)
        case "array" | "file_set":
            return isinstance(value, list)
        case "artifact":
            return isinstance(value, Mapping) and isinstance(value.get("id"), str)
        case _:  # json, any
            return True


def check_value(value: Any, spec: Mapping[str, Any]) -> str | None:
    """Why ``value`` does not fit ``spec`` (type, enum, schema), or ``None``."""
    kind = str(spec.get("type", "any"))
    if not _fits_type(value, kind):
        return f"expected {kind}, got {json.dumps(value)[:80]}"
    enum = spec.get("enum")
    if isinstance(enum, list) and value not in enum:
        return f"{json.dumps(value)[:80]} is not one of {json.dumps(enum)}"
    schema = spec.get("schema")
    if isinstance(schema, Mapping):
        from rein.formats.jsonschemas import BadSchema, compiled, errors

        try:
            found = errors(compiled(schema), value)
        except BadSchema as exc:
            return f"cannot be checked: its schema is not valid JSON Schema ({exc})"
        if found:
            return f"does not match its schema: {found[0].message}"
    return None


def bind_params(
    specs: Mapping[str, Any] | None,
    given: Mapping[str, Any],
    *,
    source: str | None = None,
    raw_text: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Bound parameters: given values (coerced when in ``raw_text``), else defaults.

    Names not declared are refused too (AG302): a typo must not silently fall back to a
    default.
    """
    specs = specs or {}
    findings: list[Finding] = []
    bound: dict[str, Any] = {}
    for name in given:
        if name not in specs:
            known = ", ".join(sorted(specs)) or "none"
            findings.append(
                Finding(
                    code="AG302",
                    severity="error",
                    message=f"parameter {name!r} is not declared (declared: {known})",
                    location=Location(file=source, pointer="/params"),
                    hint="check the spelling against the graph's params",
                )
            )
    for name, spec in specs.items():
        pointer = f"/params/{name}"
        if name in given:
            value = coerce(given[name], spec) if name in raw_text else given[name]
        elif "default" in spec:
            value = spec["default"]
        elif spec.get("required", True):
            findings.append(
                Finding(
                    code="AG301",
                    severity="error",
                    message=f"required parameter {name!r} has no value and no default",
                    location=Location(file=source, pointer=pointer),
                    hint=f"pass --param {name}=VALUE or put it in a --params file",
                )
            )
            continue
        else:
            continue
        problem = check_value(value, spec)
        if problem is not None:
            findings.append(
                Finding(
                    code="AG302",
                    severity="error",
                    message=f"parameter {name!r}: {problem}",
                    location=Location(file=source, pointer=pointer),
                    hint="give a value that fits the declared type, enum and schema",
                )
            )
            continue
        bound[name] = value
    if findings:
        raise ParamsError(findings)
    return bound
