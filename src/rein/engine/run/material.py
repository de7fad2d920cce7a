"""What a person is shown, bound by content: the digest of the material of an approval,
and the content digests of the workspace files it names.

An approval binds what was shown, not its name: a file or directory named in the material (a
gate's ``present``, the outputs under review) adds the digest of its content to the request
(``files``), so a file edited after it was shown makes a new entry and the old answer does not
apply to it (:func:`stale_files` lets a surface refuse first).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.hashing import file_sha256
from rein.formats.canonical import canonical_json
from rein.store.base import ApprovalRow


def material_digest(material: Mapping[str, Any]) -> str:
    """``sha256:`` + hex over the canonical JSON of what is shown to the person."""
    return "sha256:" + hashlib.sha256(canonical_json(material)).hexdigest()


# rein's own state and version-control metadata change on their own; they are not material.
_NOT_MATERIAL = frozenset({".rein", ".git"})
_MAX_NAME = 4096  # longer strings are text, not paths


def shown_files(workspace: Path, shown: Any) -> dict[str, str]:
    """Each workspace file or directory named by a string in ``shown`` → its content digest.

    Names are read as outputs name files: relative to the workspace, never outside it.
    A directory's digest covers every file under it (names and content).
    """
    root = Path(workspace).resolve()
    out: dict[str, str] = {}
    for name in _strings(shown):
        if name in out or not name or len(name) > _MAX_NAME or "\0" in name:
            continue
        try:
            path = (root / name).resolve()
        except (OSError, ValueError):
            continue
        if path != root and root not in path.parents:
            continue
        digest = _content_digest(path, root)
        if digest is not None:
            out[name] = digest
    return out


def stale_files(workspace: Path, row: ApprovalRow) -> list[str]:
    """The files of ``row``'s material whose content changed since it was shown."""
    bound = row.request.get("files") or {}
    now = shown_files(workspace, list(bound))
    return sorted(name for name, digest in bound.items() if now.get(name) != digest)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _content_digest(path: Path, root: Path) -> str | None:
    try:
        if path.is_file():
            return "sha256:" + file_sha256(path)
        if not path.is_dir():
            return None
        listing: dict[str, str] = {}
        for folder, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in _NOT_MATERIAL)
            for file in sorted(files):
                full = Path(folder) / file
                if full.is_file() and not full.is_symlink():
                    listing[full.relative_to(path).as_posix()] = file_sha256(full)
        return "sha256:" + hashlib.sha256(canonical_json(listing)).hexdigest()
    except OSError:
        return None  # unreadable: nothing to bind, the name alone is what was shown


__all__ = ["material_digest", "shown_files", "stale_files"]
