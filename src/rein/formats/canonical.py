"""RFC 8785 canonical JSON (JCS) and the two digests built on it.

* AGS graphs (§3.3): ``sha256-`` + base64 of SHA-256 over the canonical form.
* OAP profiles (§2.2): ``sha256:`` + lowercase hex of the same.

Most documents hold only strings, booleans, null and small integers; for those the
canonical form is exactly ``json.dumps`` with sorted keys and no whitespace, which runs in
C. Anything that could differ (floats, integers beyond 2^53, keys outside the Basic
Multilingual Plane, which JCS sorts by UTF-16 code units) takes the ``rfc8785`` package's
full implementation.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

from rein.errors import DocumentError

_SAFE_INT = 2**53 - 1


def _plain_float(x: float) -> bool:
    """Whether Python's repr of ``x`` is what ECMAScript prints (JCS number form)."""
    if x.is_integer():
        return abs(x) <= _SAFE_INT  # printed as an integer after normalizing
    return 1e-4 <= abs(x) < 1e16


def _normalize(value: Any) -> Any:
    """Integral floats become ints (JCS prints 1.0 as 1); everything else is kept."""
    t = type(value)
    if t is float:
        return int(value) if value.is_integer() else value
    if t is dict:
        return {k: _normalize(v) for k, v in value.items()}
    if t is list:
        return [_normalize(v) for v in value]
    return value


def _fast_path_ok(value: Any) -> bool | None:
    """True: dump as is. None: dump after :func:`_normalize` (integral floats). False: use
    the full JCS implementation."""
    floats = False
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is int:
            if -_SAFE_INT <= v <= _SAFE_INT:
                continue
            return False
        if t is dict:
            for k, item in v.items():
                if type(k) is not str or not k.isascii() and any(ord(c) > 0xFFFF for c in k):
                    return False
                push(item)
            continue
        if t is list:
            stack.extend(v)
            continue
        if t is float and math.isfinite(v) and _plain_float(v):
            # Python and ECMAScript print non-integral floats alike; only 1.0 → "1" differs.
            floats = floats or v.is_integer()
            continue
        return False  # other floats, tuples, subclasses: let the full implementation decide
    return None if floats else True


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON value."""
    fast = _fast_path_ok(value)
    if fast is not False:
        if fast is None:
            value = _normalize(value)
        try:
            return json.dumps(
                value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                allow_nan=False,
            ).encode("utf-8")
        except (UnicodeEncodeError, ValueError):
            pass
    import rfc8785  # what the fast path above cannot write: rare, and a large import

    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise DocumentError(
            f"the document has no canonical JSON form: {exc}",
            code="CANON001",
            hint="non-finite numbers, integers beyond 2^53 and lone surrogates cannot be digested",
        ) from None


def ags_digest(document: Any) -> str:
    """The normative AGS graph digest: ``sha256-`` + base64 (equal to ``ags.graph_digest``)."""
    raw = hashlib.sha256(canonical_json(document)).digest()
    return "sha256-" + base64.b64encode(raw).decode("ascii")


def oap_digest(document: Any) -> str:
    """The OAP digest: ``sha256:`` + lowercase hex (equal to ``oap-validate --digest``)."""
    return "sha256:" + hashlib.sha256(canonical_json(document)).hexdigest()
