"""OAP digests (§2.2): ``sha256:`` + lowercase hex of SHA-256 over RFC 8785 bytes.

* profile digest: the whole document as loaded (``state`` and ``history`` included);
  what a delta's ``target.digest`` pins.
* spec digest: ``{"metadata": metadata minus revision/updated_at/trust, "spec": spec}``;
  stable across writeback and trust assignment, what ``extends[].digest`` pins.

Both are taken over the document *as loaded*, before trust is recomputed, so they equal
``oap-validate --digest``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.formats.canonical import oap_digest

_MUTABLE_METADATA = ("revision", "updated_at", "trust")


def profile_digest(document: Mapping[str, Any]) -> str:
    """The digest of the whole document."""
    return oap_digest(document)


def spec_digest(document: Mapping[str, Any]) -> str:
    """The digest of the instantiation contract (identity plus spec)."""
    metadata = document.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    for key in _MUTABLE_METADATA:
        metadata.pop(key, None)
    return oap_digest({"metadata": metadata, "spec": document.get("spec")})
