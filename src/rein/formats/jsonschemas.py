"""Checking values against a JSON Schema that is not one of the spec documents' own: an
output's or a parameter's declared schema, a driver's ``respond_with``, the run record schema.

rein's own code uses one validator, ``jsonschema_rs`` (the spec documents' schemas too, in
:mod:`rein.formats.ags.schema` and :mod:`rein.formats.oap.schema`). Its messages speak JSON
(``"x" is not of type "integer"``), which is what the reader of a refusal writes.

* The draft follows the schema's ``$schema`` (2020-12 when absent); a ``$schema`` naming no
  draft is a broken schema, not a reason to guess one.
* A ``$ref`` to anything outside the schema is never fetched: it is a broken schema.
* ``format`` is asserted only where asked (``formats=True``), as the run record schema is.
* A value JSON cannot hold (a lone surrogate, a NaN or infinite number) is a violation of its
  own, with a message that says so: the validator would crash on the one and read the other
  as null.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, NoReturn

from rein.core.frozen import Frozen
from rein.formats.pointers import pointer

# The drafts a ``$schema`` may name, without scheme and fragment. Any other is refused
# before the validator sees it: it would try to fetch the meta-schema from the network.
_DRAFTS = frozenset({"json-schema.org/draft-04/schema", "json-schema.org/draft-06/schema",
                     "json-schema.org/draft-07/schema", "json-schema.org/draft/2019-09/schema",
                     "json-schema.org/draft/2020-12/schema"})


class BadSchema(ValueError):
    """The schema itself is not valid JSON Schema, or cannot be resolved offline."""


def _refuse(uri: str) -> NoReturn:
    raise BadSchema(f"the remote reference {uri} is not fetched")


def compiled(schema: Any, *, formats: bool = False) -> Any:
    """A validator for ``schema``; BadSchema (with the validator's reason) when it is broken."""
    import jsonschema_rs  # imported here: only a value with a schema needs the validator

    if not isinstance(schema, (Mapping, bool)):
        raise BadSchema(f"a schema is an object or a boolean, not {type(schema).__name__}")
    draft = schema.get("$schema") if isinstance(schema, Mapping) else None
    if draft is not None and (not isinstance(draft, str) or draft.removeprefix("https://")
                              .removeprefix("http://").removesuffix("#") not in _DRAFTS):
        raise BadSchema(f"$schema {draft!r} names no JSON Schema draft (use draft 2020-12, "
                        "2019-09, 7, 6 or 4)")
    try:
        document = dict(schema) if isinstance(schema, Mapping) else schema
        if isinstance(document, dict):
            jsonschema_rs.meta.validate(document)
        return jsonschema_rs.validator_for(document, validate_formats=formats,
                                           retriever=_refuse)
    except jsonschema_rs.ValidationError as exc:
        where = pointer(*exc.instance_path)
        raise BadSchema(f"{where}: {exc.message}" if where else exc.message) from None
    except (jsonschema_rs.ReferencingError, ValueError) as exc:
        raise BadSchema(str(exc).splitlines()[0]) from None


class NotJSON(Frozen):
    """A violation the validator cannot report rightly: a string (or a property name) holding
    a lone surrogate, which JSON's ``\\ud800`` escape allows and Unicode text does not (the
    validator cannot take it), or a NaN or infinite number, which JSON has no literal for
    (the validator reads it as null). It has the fields rein reads of the validator's own
    violations."""

    instance_path: tuple[str | int, ...]
    instance: str  # the value as JSON would write it, lone surrogates escaped: printable
    message: str
    kind: ClassVar[Any] = None
    schema_path: ClassVar[tuple[str | int, ...]] = ()


def _not_json_at(path: list[str | int], value: str | float) -> NotJSON:
    if isinstance(value, str):
        shown = json.dumps(value)
        why = "is not Unicode text: it holds a lone surrogate (U+D800 to U+DFFF alone)"
    else:
        shown, why = repr(value), "is not a JSON number (JSON has no NaN or Infinity)"
    return NotJSON(instance_path=tuple(path), instance=shown, message=f"{shown} {why}")


def errors(validator: Any, instance: Any) -> list[Any]:
    """Every violation of ``instance``, ordered by where it is (then as the validator found
    them): each has ``instance_path``, ``message`` and ``kind``.

    A value JSON cannot hold (a lone surrogate, as the document loader refuses one, or a NaN
    or infinite number) is a violation of its own (:class:`NotJSON`) whatever the schema
    says; the validator checks the rest, a lone surrogate read as U+FFFD, and what it finds
    at or below such a value is left out."""
    odd = list(_not_json(instance, []))
    if not odd:
        found = list(validator.iter_errors(instance))
    else:
        flagged = [tuple(e.instance_path) for e in odd]
        found = [*odd, *(e for e in validator.iter_errors(_as_text(instance))
                         if not any(tuple(e.instance_path[:len(f)]) == f for f in flagged))]
    found.sort(key=lambda e: tuple(_token_key(t) for t in e.instance_path))
    return found


def _not_json(value: Any, path: list[str | int]) -> Iterable[NotJSON]:
    if isinstance(value, str):
        if _LONE.search(value):
            yield _not_json_at(path, value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            yield _not_json_at(path, value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if _LONE.search(key):
                shown = _as_text(key)
                yield _not_json_at([*path, shown], key)
                yield from _not_json(item, [*path, shown])
            else:
                yield from _not_json(item, [*path, key])
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _not_json(item, [*path, index])


_LONE = re.compile("[\ud800-\udfff]")


def _as_text(value: Any) -> Any:
    """``value`` with every lone surrogate replaced by U+FFFD, which the validator can take."""
    if isinstance(value, str):
        return _LONE.sub("\ufffd", value)
    if isinstance(value, Mapping):
        return {_as_text(k): _as_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_text(v) for v in value]
    return value


def _token_key(token: str | int) -> tuple[int, int, str]:
    # Array indexes in numeric order, and never compared with a property name.
    return (0, token, "") if isinstance(token, int) else (1, 0, token)


def most_relevant(found: Iterable[Any]) -> Any | None:
    """The violation nearest the top of the instance: a missing field before what is wrong
    inside a sibling, the way a person reads a document."""
    return min(found, key=lambda e: len(e.instance_path), default=None)


def where(error: Any, *, root: str = "/") -> str:
    """The violation's place as a JSON Pointer (``root`` for the instance itself)."""
    return pointer(*error.instance_path) or root


__all__ = ["BadSchema", "NotJSON", "compiled", "errors", "most_relevant", "where"]
