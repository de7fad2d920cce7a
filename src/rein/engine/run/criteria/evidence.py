"""Evidence hygiene: secrets redacted, long text cut to a size a record and a prompt can hold.

Redaction runs before truncation, so a secret that straddles the cut is never half-shown.
Truncation keeps the head and the tail: a failing test run reports its summary at the end,
and the first lines usually say what was run.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rein.formats.redaction import Secrets, marker

REDACTED = marker(None)

# Per piece of text (one stream of a command, one judge's reasoning, one schema error).
EVIDENCE_LIMIT = 8_000
_HEAD = 2_000


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of every secret replaced by ``[secret]`` (the one
    redaction pass, :mod:`rein.formats.redaction`; longer secrets first)."""
    return Secrets.of(values=secrets).text(text)


def truncate(text: str, limit: int = EVIDENCE_LIMIT) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters (head and tail kept), and whether it was cut."""
    if len(text) <= limit:
        return text, False
    head = min(_HEAD, limit // 4)
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n… [{omitted} characters omitted] …\n{text[-tail:]}", True


def clean(text: str, secrets: Iterable[str], limit: int = EVIDENCE_LIMIT) -> tuple[str, bool]:
    """Redact, then truncate."""
    return truncate(redact(text, secrets), limit)


def clean_value(value: Any, secrets: frozenset[str]) -> tuple[Any, bool]:
    """Redact and truncate every string inside a piece of structured evidence."""
    if isinstance(value, str):
        return clean(value, secrets)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        cut = False
        for key, item in value.items():
            out[key], item_cut = clean_value(item, secrets)
            cut = cut or item_cut
        return out, cut
    if isinstance(value, (list, tuple)):
        items = [clean_value(item, secrets) for item in value]
        return [v for v, _ in items], any(c for _, c in items)
    return value, False
