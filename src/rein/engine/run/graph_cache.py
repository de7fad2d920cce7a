"""The approved graph, parsed once: every later pass reads it back as JSON.

A driver turn is a fresh process, and each ``rein submit`` advances the run, which reads
the graph file again (what runs is what the file holds, checked against the approval:
RT053). Parsing YAML, and importing the parser, is most of that read. So the data a file
parses to is kept under ``.rein/cache/graphs/``, named by the SHA-256 of the file's bytes,
as JSON beside the AGS digest of that data.

The graph a process has just parsed and validated (``prepare``, before ``rein run`` starts
it) is kept in memory too, as JSON under the SHA-256 of its text (:func:`remember`), so
that starting it reads the file's bytes again but parses them only when they changed.

An entry is used only when all of this holds, else the file is parsed as if there were no
cache (and the entry rewritten): its name and its recorded source hash are the hash of the
bytes read now; it parses as JSON; and the AGS digest of its data is the one it records.
A cache therefore never changes what a file means, and the approval check that follows
compares the digest of the very data that runs. The loader gives plain JSON values only
(string keys, finite numbers: it refuses the rest), so JSON holds the data exactly. Nothing
here raises for the cache's sake: an unwritable or corrupt cache only costs the parse, and
a file the loader refuses is refused as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.reading import read_small_file

if TYPE_CHECKING:
    from rein.formats.loader import LoadLimits

# The loader's default limit (LoadLimits.max_bytes): a larger file is the loader's to refuse.
_MAX_BYTES = 32 * 1024 * 1024
# From this size on, the data is built with the collector paused (rein.core.collector); the
# loader's own threshold (rein.formats.loader.LARGE_TEXT), repeated so that a driver turn
# reading the cache does not import the loader.
LARGE_TEXT = 256 * 1024

FORMAT = "rein.graph-cache/1"
CACHE_DIR = Path(".rein") / "cache" / "graphs"

__all__ = ["CACHE_DIR", "FORMAT", "load_graph", "remember"]

# SHA-256 of a file's bytes → the data they parsed to in this process, as JSON (each use
# reads a fresh copy, so nothing a run does to its graph reaches another), and its digest
# as the validator computed it. A few only.
_RECENT: dict[str, tuple[str, str]] = {}
_RECENT_MAX = 8


def remember(text: str, data: Any, digest: str) -> None:
    """Keep ``data``, just parsed from a file whose whole text is ``text``, and its AGS
    ``digest`` for the next :func:`load_graph` of the same bytes in this process. A file
    whose bytes are not exactly ``text`` (a byte-order mark, Markdown around its
    frontmatter) never matches."""
    try:
        encoded = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError):
        return
    source = hashlib.sha256(text.encode("utf-8")).hexdigest()
    _RECENT.pop(source, None)
    _RECENT[source] = (encoded, digest)
    while len(_RECENT) > _RECENT_MAX:
        del _RECENT[next(iter(_RECENT))]


def load_graph(path: str | Path, workspace: Path, *, approved: str | None = None,
               limits: LoadLimits | None = None) -> Any:
    """The data of the graph at ``path``, as :func:`rein.formats.loader.load_path` gives it;
    from the cache of ``workspace`` when a valid entry holds it. ``approved``: the digest
    the run was approved for; an entry with any other data is not used, so that what a
    cache can ever hand out is the approved graph (a changed file is parsed, and the
    approval check sees what it really holds). ``limits``: the loader's (rein.toml's
    ``[limits]``); a file over them is the loader's to refuse."""
    raw = read_small_file(path, _MAX_BYTES if limits is None else limits.max_bytes)
    if raw is None:  # missing, too large, not a regular file: the loader says why
        return _parse(path, limits)
    if len(raw) < LARGE_TEXT:
        return _load(raw, path, workspace, approved=approved, limits=limits)
    from rein.core.collector import paused

    with paused():  # the graph's data, alive as long as the run (rein.core.collector)
        return _load(raw, path, workspace, approved=approved, limits=limits)


def _load(raw: bytes, path: str | Path, workspace: Path, *, approved: str | None,
          limits: LoadLimits | None) -> Any:
    source = hashlib.sha256(raw).hexdigest()
    entry = workspace / CACHE_DIR / f"{source}.json"
    cached = _read(entry, source, approved)
    if cached is not None:
        return cached
    known = _RECENT.get(source)
    if known is None:
        data = _parse(path, limits)
        _write(entry, source, data)
    else:  # the data of these very bytes, and its digest, as this process validated them
        data = json.loads(known[0])
        _write(entry, source, data, known[1])
    return data


def _parse(path: str | Path, limits: LoadLimits | None) -> Any:
    from rein.formats.loader import DEFAULT_LIMITS, load_path

    return load_path(path, limits=limits or DEFAULT_LIMITS).data


def _read(entry: Path, source: str, approved: str | None) -> Any | None:
    """The data of a valid entry for ``source`` (with the ``approved`` digest, when one is
    given), else ``None``."""
    from rein.formats.canonical import ags_digest

    raw = read_small_file(entry, _MAX_BYTES * 4)
    if raw is None:
        return None
    try:
        stored = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(stored, dict) or stored.get("format") != FORMAT or \
            stored.get("source_sha256") != source or "data" not in stored:
        return None
    data = stored["data"]
    if approved is not None and stored.get("digest") != approved:
        return None
    try:
        if ags_digest(data) != stored.get("digest"):
            return None
    except (ValueError, TypeError):
        return None
    return data


def _write(entry: Path, source: str, data: Any, digest: str | None = None) -> None:
    """Keep ``data`` for ``source`` (``digest``: its AGS digest, when known); never fails
    the caller."""
    from rein.formats.canonical import ags_digest

    try:
        text = json.dumps({"format": FORMAT, "source_sha256": source,
                           "digest": digest or ags_digest(data), "data": data},
                          ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError):
        return
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, entry)  # whole or not at all: a reader never sees half an entry
    except (OSError, ValueError):  # ValueError: text that UTF-8 cannot encode
        with contextlib.suppress(OSError):
            tmp.unlink()

