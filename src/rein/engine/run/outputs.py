"""Checking what an attempt produced against the node's declared outputs (AGS §9.3).

Before success is evaluated, every declared output is checked: a required output that is
missing is ``RT033`` (null counts as missing, whatever the type: a worker that answers
``null`` has not produced the output); a value that is not of the declared value type is ``RT031``;
a value that does not validate against the output's ``schema`` is ``RT032``. Undeclared
outputs are not this module's business.

Value types (AGS §9.1): ``string``/``text``/``markdown`` are strings; ``number`` is any
finite number and ``integer`` an integral one (booleans are neither, as in JSON Schema);
``boolean``; ``object``; ``array``; ``json`` any JSON value; ``file`` a workspace-relative
path, ``directory`` likewise, ``file_set`` an array of such paths — with a workspace given,
they must exist inside it; ``artifact`` an object with a string ``id``; ``reference`` a URI
with a scheme (``https://…``, ``urn:…``); ``any`` anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from rein.core.frozen import Frozen

OutputCode = Literal["RT031", "RT032", "RT033"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


class OutputProblem(Frozen):
    """One output that does not meet its declaration."""

    code: OutputCode  # RT031 type, RT032 schema, RT033 missing required
    output: str
    message: str

    def to_json(self) -> dict[str, str]:
        """``{"code", "output", "message"}``."""
        return {"code": self.code, "output": self.output, "message": self.message}


class SchemaInvalid(ValueError):
    """The schema itself is not a valid JSON Schema."""


def check_outputs(
    outputs: Mapping[str, Any],
    specs: Mapping[str, Mapping[str, Any]],
    *,
    workspace: Path | None = None,
    optional: frozenset[str] = frozenset(),
) -> list[OutputProblem]:
    """Every problem with ``outputs`` against ``specs``, in declared order.

    ``optional`` names outputs excused from being required (degraded outputs allowed by the
    failure ladder); they are still type- and schema-checked when present.
    """
    problems: list[OutputProblem] = []
    for name, spec in specs.items():
        value = outputs.get(name)
        if value is None:
            if spec.get("required", True) and name not in optional:
                problems.append(
                    OutputProblem(
                        code="RT033",
                        output=name,
                        message=f"required output {name!r} was not produced",
                    )
                )
            continue
        type_name = str(spec.get("type", "any"))
        wrong = type_problem(value, type_name, workspace=workspace)
        if wrong is not None:
            problems.append(
                OutputProblem(code="RT031", output=name, message=f"output {name!r} {wrong}")
            )
            continue
        if "schema" in spec:
            try:
                error = first_schema_error(value, spec["schema"])
            except SchemaInvalid as exc:
                error = f"its schema is not a valid JSON Schema: {exc}"
            if error is not None:
                problems.append(
                    OutputProblem(
                        code="RT032",
                        output=name,
                        message=f"output {name!r} does not match its schema: {error}",
                    )
                )
    return problems


def type_problem(value: Any, type_name: str, *, workspace: Path | None = None) -> str | None:
    """Why ``value`` is not a ``type_name``, or ``None`` when it is."""
    match type_name:
        case "string" | "text" | "markdown":
            return None if isinstance(value, str) else _expected("a string", value)
        case "number":
            ok = _is_number(value) and math.isfinite(value)
            return None if ok else _expected("a finite number", value)
        case "integer":
            ok = _is_number(value) and math.isfinite(value) and float(value).is_integer()
            return None if ok else _expected("an integer", value)
        case "boolean":
            return None if isinstance(value, bool) else _expected("a boolean", value)
        case "object":
            return None if isinstance(value, dict) else _expected("an object", value)
        case "array":
            return None if isinstance(value, list) else _expected("an array", value)
        case "json":
            return None if _is_json(value) else "is not a JSON value"
        case "any":
            return None
        case "file" | "directory":
            return _path_problem(value, type_name, workspace)
        case "file_set":
            if not isinstance(value, list):
                return _expected("an array of file paths", value)
            for index, item in enumerate(value):
                problem = _path_problem(item, "file", workspace)
                if problem is not None:
                    return f"item {index} {problem}"
            return None
        case "artifact":
            ok = isinstance(value, dict) and isinstance(value.get("id"), str) and value["id"]
            return None if ok else _expected('an artifact object with a string "id"', value)
        case "reference":
            ok = isinstance(value, str) and _URI.match(value) is not None
            return None if ok else _expected("a URI with a scheme (e.g. https://…)", value)
        case _:
            return f"has an unknown declared type {type_name!r}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _expected(what: str, value: Any) -> str:
    return f"should be {what}, got {_kind(value)}"


def _path_problem(value: Any, type_name: str, workspace: Path | None) -> str | None:
    if not isinstance(value, str) or not value:
        return _expected(f"a {type_name} path (a non-empty string)", value)
    if "\x00" in value:  # no file can be named so, and the OS refuses to be asked
        return f"names {value!r}, which contains a NUL byte"
    if workspace is None:
        return None
    root = workspace.resolve()
    pure = PurePosixPath(value.replace("\\", "/"))
    path = (pure if pure.is_absolute() else root / pure)
    resolved = Path(path).resolve()
    if resolved != root and root not in resolved.parents:
        return f"names {value!r}, which is outside the workspace"
    if type_name == "directory":
        return None if resolved.is_dir() else f"names {value!r}, which is not a directory"
    return None if resolved.is_file() else f"names {value!r}, which is not a file"


def first_schema_error(value: Any, schema: Any) -> str | None:
    """The most relevant validation error of ``value`` against ``schema``, or ``None``.

    The draft follows the schema's ``$schema`` (2020-12 when absent). Remote references are
    never fetched. Raises :class:`SchemaInvalid` when the schema itself is broken.
    """
    # Imported here: only an output that declares a schema needs the validator.
    from rein.formats.jsonschemas import BadSchema, compiled, errors, most_relevant, where

    try:
        validator = compiled(schema)
    except BadSchema as exc:
        raise SchemaInvalid(str(exc)) from None
    error = most_relevant(errors(validator, value))
    if error is None:
        return None
    return f"at {where(error)}: {error.message}"
