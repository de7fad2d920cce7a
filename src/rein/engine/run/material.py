"""What a person is shown, bound by content: the digest of the material of an approval,
and the content digests of the workspace files it names.

An approval binds what was shown, not its name: a file or directory named in the material (a
gate's ``present``, the outputs under review) adds the digest of its content to the request
(``files``), so a file edited after it was shown makes a new entry and the old answer does not
apply to it (:func:`stale_files` lets a surface refuse first).

The request also keeps a copy of each text file it shows (``contents``, up to
:data:`MAX_KEPT` bytes an approval), read in the same read as its digest: a person is shown
the content the answer binds (:func:`kept_copy`), not the file as it is when they look,
which whoever can write the workspace may have changed and changed back. A copy is not
hashed into the material's digest: its digest in ``files`` binds it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.hashing import file_sha256
from rein.formats.canonical import canonical_json
from rein.store.base import ApprovalRow

KEPT = "contents"
"""The request's key of the copies it keeps: file name → the text shown."""
MAX_KEPT = 1 << 20
"""Bytes of copies one approval keeps; a file beyond them is bound by its digest alone."""


def material_digest(material: Mapping[str, Any]) -> str:
    """``sha256:`` + hex over the canonical JSON of what is shown to the person (the kept
    copies left out: each is bound by its digest in ``files``)."""
    bound = {k: v for k, v in material.items() if k != KEPT}
    return "sha256:" + hashlib.sha256(canonical_json(bound)).hexdigest()


# rein's own state and version-control metadata change on their own; they are not material.
_NOT_MATERIAL = frozenset({".rein", ".git"})
_MAX_NAME = 4096  # longer strings are text, not paths
_CHUNK = 1 << 20


def shown_files(workspace: Path, shown: Any) -> dict[str, str]:
    """Each workspace file or directory named by a string in ``shown`` → its content digest.

    Names are read as outputs name files: relative to the workspace, never outside it.
    A directory's digest covers every file under it (names and content).
    """
    return shown_material(workspace, shown, room=0)[0]


def shown_material(workspace: Path, shown: Any, *, room: int = MAX_KEPT
                   ) -> tuple[dict[str, str], dict[str, str]]:
    """:func:`shown_files`, and a copy of each UTF-8 text file among them, taken from the
    bytes its digest is computed over, while ``room`` bytes of copies remain."""
    root = Path(workspace).resolve()
    out: dict[str, str] = {}
    kept: dict[str, str] = {}
    for name in _strings(shown):
        if name in out or not name or len(name) > _MAX_NAME or "\0" in name:
            continue
        try:
            path = (root / name).resolve()
        except (OSError, ValueError):
            continue
        if path != root and root not in path.parents:
            continue
        digest, text = _content(path, room)
        if digest is not None:
            out[name] = digest
        if text is not None:
            kept[name] = text
            room -= len(text.encode("utf-8"))
    return out, kept


def kept_copy(row: ApprovalRow, name: str) -> tuple[str, str | None]:
    """The copy ``row`` keeps of the file ``name`` it shows: ``("intact", text)`` when it is
    the content the answer binds; ``("none", None)`` when none was kept (a directory, a
    file too large or not text, an entry asked before copies were kept); ``("altered",
    None)`` when the copy is not that content (edited in the store, or a secret's value
    redacted from it)."""
    digest = (row.request.get("files") or {}).get(name)
    kept = row.request.get(KEPT)
    text = kept.get(name) if isinstance(kept, Mapping) else None
    if not isinstance(text, str) or not isinstance(digest, str):
        return "none", None
    actual = "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return ("intact", text) if actual == digest else ("altered", None)


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


def _content(path: Path, room: int) -> tuple[str | None, str | None]:
    """The content digest of ``path``, and its text when it is a UTF-8 file of at most
    ``room`` bytes (None: not a file, too large, or not text)."""
    try:
        if path.is_file():
            return file_content(path, room)
        if not path.is_dir():
            return None, None
        return _directory_digest(path), None
    except OSError:
        return None, None  # unreadable: nothing to bind, the name alone is what was shown


def file_content(path: Path, room: int) -> tuple[str | None, str | None]:
    """A regular file's ``sha256:`` digest and, when it is UTF-8 text without NUL of at most
    ``room`` bytes, its text, from one read: a text read apart from its digest could be of
    other content. ``(None, None)`` for what is not a regular file (a FIFO is never read);
    :class:`OSError` when it cannot be opened or read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced by a FIFO since is_file()
            return None, None
        digest = hashlib.sha256()
        kept: list[bytes] | None = [] if room > 0 else None
        size = 0
        while block := os.read(fd, _CHUNK):
            digest.update(block)
            size += len(block)
            if kept is not None and size > room:
                kept = None
            elif kept is not None:
                kept.append(block)
    finally:
        os.close(fd)
    text = None
    if kept is not None:
        try:
            text = b"".join(kept).decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and "\0" in text:  # binary: bound by its digest alone
            text = None
    return "sha256:" + digest.hexdigest(), text


def _directory_digest(path: Path) -> str:
    listing: dict[str, str] = {}
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in _NOT_MATERIAL)
        for file in sorted(files):
            full = Path(folder) / file
            if full.is_file() and not full.is_symlink():
                listing[full.relative_to(path).as_posix()] = file_sha256(full)
    return "sha256:" + hashlib.sha256(canonical_json(listing)).hexdigest()


__all__ = ["KEPT", "MAX_KEPT", "file_content", "kept_copy", "material_digest", "shown_files",
           "shown_material", "stale_files"]
