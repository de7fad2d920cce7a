"""The happy path of reading a small file: a regular file within its limit, read whole.

The document loader's reader (:func:`rein.formats.loader.read_limited`) explains every
refusal with a code and a hint, and importing it brings the YAML parser along. A driver
turn reads two small files (the graph and the envelope) and needs none of that unless
something is wrong, so it asks here first and hands anything unusual to the loader.
"""

from __future__ import annotations

import json
import os
import stat

TYPE_CHECKING = False  # not typing's: a cold `rein next` reads its rein.toml through here
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

__all__ = ["read_json_object", "read_small_file"]


def read_small_file(path: str | Path, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes``, else
    ``None`` (missing, a folder, a FIFO or a device, too large, unreadable): the caller's
    own reader then says why. Opened without blocking and checked on the open descriptor,
    so a FIFO never waits for a writer and a growing file is never read past the limit."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > max_bytes else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or ``None`` when the file is missing, unreadable, not
    JSON or not an object: for state files rein wrote itself, where absence means "none
    yet"."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
