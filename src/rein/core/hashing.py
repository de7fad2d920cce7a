"""The SHA-256 of a file's content: one helper for every place that binds to what a file
holds (approvals bind to the material shown; the driver's snapshot tells writes apart)."""

from __future__ import annotations

import hashlib
import os

_CHUNK = 1 << 20  # read in blocks: a large file is hashed without being held in memory


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The lowercase hex SHA-256 of the file at ``path`` (OSError when it cannot be read)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


__all__ = ["file_sha256"]
