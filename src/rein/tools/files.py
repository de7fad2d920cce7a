"""File tools: read, write, edit and search inside the workspace.

Each function receives paths already resolved by :func:`rein.tools.paths.resolve_in_workspace`
and already checked by the gate; these functions only do the work, within size limits, and
raise :class:`ToolFailure` with a message the model can act on when they cannot.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from rein.errors import LoadError
from rein.formats.loader import read_limited
from rein.tools.catalog import ToolResult
from rein.tools.paths import ToolFailure, WorkspacePath

MAX_READ_BYTES = 256 * 1024
MAX_FILE_BYTES = 64 * 1024 * 1024  # a file the read tool reads at all (then truncates)
MAX_WRITE_BYTES = 4 * 1024 * 1024
MAX_SEARCH_RESULTS = 200
MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024
_SKIP_DIRS = frozenset({".git", ".rein", "node_modules", "__pycache__", ".venv"})


def read_file(target: WorkspacePath, args: Mapping[str, Any]) -> ToolResult:
    """Read a UTF-8 text file, optionally ``offset``/``limit`` lines; truncated past 256 KiB."""
    path = target.absolute
    if not path.exists():
        raise ToolFailure(f"{target.relative}: no such file", code="TOOL020")
    if path.is_dir():
        raise ToolFailure(
            f"{target.relative} is a directory", code="TOOL021", hint="use search to list files"
        )
    raw = _read_regular(target)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(f"{target.relative} is not UTF-8 text", code="TOOL022") from None
    return read_result(target, text, args, size=len(raw))


def read_result(target: WorkspacePath, text: str, args: Mapping[str, Any], *,
                size: int) -> ToolResult:
    """What the model is told of a file's ``text``: the ``offset``/``limit`` lines, truncated
    past 256 KiB (shared by the local read and a client's buffer)."""
    offset = _positive_int(args.get("offset"), "offset")
    limit = _positive_int(args.get("limit"), "limit")
    if offset or limit:
        lines = text.splitlines(keepends=True)
        start = (offset or 1) - 1
        text = "".join(lines[start : start + limit if limit else None])
    truncated = len(text.encode()) > MAX_READ_BYTES
    if truncated:
        text = text.encode()[:MAX_READ_BYTES].decode(errors="ignore")
        text += f"\n[truncated at {MAX_READ_BYTES} bytes; read a line range with offset/limit]"
    return ToolResult(
        ok=True,
        content=text,
        data={"path": target.relative, "bytes": size, "truncated": truncated},
    )


def _read_regular(target: WorkspacePath) -> bytes:
    """The file's bytes, if it is a regular file of at most MAX_FILE_BYTES: a FIFO in the
    workspace would block the read forever, and a huge file would be read whole."""
    try:
        return read_limited(target.absolute, MAX_FILE_BYTES, source=target.relative)
    except LoadError as exc:
        if exc.kind == "too_large":
            raise ToolFailure(f"{target.relative} is larger than {MAX_FILE_BYTES:,} bytes",
                              code="TOOL028",
                              hint="search it, or read part of it with a shell command") from None
        raise ToolFailure(exc.message, code="TOOL021", hint=exc.hint) from None


def write_file(target: WorkspacePath, args: Mapping[str, Any]) -> ToolResult:
    """Create or overwrite a file; parent directories are created."""
    data = write_content(target, args).encode()
    target.absolute.parent.mkdir(parents=True, exist_ok=True)
    existed = target.absolute.exists()
    target.absolute.write_bytes(data)
    return written(target, len(data), existed=existed)


def write_content(target: WorkspacePath, args: Mapping[str, Any]) -> str:
    """The ``content`` a write may put in ``target`` (a string, within the size limit)."""
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolFailure("content must be a string", code="TOOL023")
    if len(content.encode()) > MAX_WRITE_BYTES:
        raise ToolFailure(f"content is larger than {MAX_WRITE_BYTES} bytes", code="TOOL024")
    if target.absolute.is_dir():
        raise ToolFailure(f"{target.relative} is a directory", code="TOOL021")
    return content


def written(target: WorkspacePath, size: int, *, existed: bool) -> ToolResult:
    verb = "overwrote" if existed else "created"
    return ToolResult(
        ok=True,
        content=f"{verb} {target.relative} ({size} bytes)",
        data={"path": target.relative, "bytes": size, "created": not existed},
    )


def edit_file(target: WorkspacePath, args: Mapping[str, Any]) -> ToolResult:
    """Replace ``old`` by ``new``; ``old`` must occur once unless ``replace_all``."""
    current = read_file(target, {}).content if target.absolute.is_file() else None
    updated, result = edited(target, current, args)
    target.absolute.write_text(updated, encoding="utf-8")
    return result


def edited(target: WorkspacePath, current: str | None, args: Mapping[str, Any]
           ) -> tuple[str, ToolResult]:
    """``current`` with the edit applied, and what the model is told (shared by the local
    edit and a client's buffer)."""
    old, new = args.get("old"), args.get("new")
    if not isinstance(old, str) or not isinstance(new, str) or not old:
        raise ToolFailure("old and new must be strings, and old may not be empty", code="TOOL023")
    if current is None:
        raise ToolFailure(f"{target.relative}: no such file", code="TOOL020")
    count = current.count(old)
    if count == 0:
        raise ToolFailure(
            f"{target.relative}: the text to replace was not found",
            code="TOOL025",
            hint="read the file first and copy the exact text, whitespace included",
        )
    if count > 1 and not args.get("replace_all"):
        raise ToolFailure(
            f"{target.relative}: the text to replace occurs {count} times",
            code="TOOL026",
            hint="include more surrounding text so it is unique, or set replace_all",
        )
    updated = current.replace(old, new) if args.get("replace_all") else current.replace(old, new, 1)
    replaced = count if args.get("replace_all") else 1
    return updated, ToolResult(
        ok=True,
        content=f"edited {target.relative} ({replaced} replacement{'s' if replaced > 1 else ''})",
        data={"path": target.relative, "replacements": replaced},
    )


def search_files(
    root: WorkspacePath,
    args: Mapping[str, Any],
    *,
    workspace: os.PathLike[str] | str,
    readable: Callable[[str], bool],
) -> ToolResult:
    """Regex search below ``root``; ``readable(relpath)`` filters files by permission."""
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ToolFailure("pattern must be a non-empty string", code="TOOL023")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolFailure(f"invalid regular expression: {exc}", code="TOOL027") from None
    name_glob = args.get("glob")
    if not root.absolute.is_dir():
        raise ToolFailure(f"{root.relative}: no such directory", code="TOOL020")
    base = os.fspath(workspace)
    hits: list[str] = []
    files = 0
    for dirpath, dirnames, filenames in os.walk(root.absolute, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for filename in sorted(filenames):
            if isinstance(name_glob, str) and not fnmatch.fnmatch(filename, name_glob):
                continue
            full = os.path.join(dirpath, filename)
            rel = os.path.relpath(full, base).replace(os.sep, "/")
            if os.path.islink(full) or not readable(rel):
                continue
            if _search_one(full, rel, regex, hits):
                files += 1
            if len(hits) >= MAX_SEARCH_RESULTS:
                hits.append(f"[stopped after {MAX_SEARCH_RESULTS} matches; narrow the search]")
                return ToolResult(ok=True, content="\n".join(hits), data={"matches": len(hits) - 1})
    content = "\n".join(hits) if hits else "no matches"
    return ToolResult(ok=True, content=content, data={"matches": len(hits), "files": files})


def _search_one(full: str, rel: str, regex: re.Pattern[str], hits: list[str]) -> bool:
    try:
        # Regular files only, read to a bound: opening a FIFO would wait for a writer.
        text = read_limited(full, MAX_SEARCH_FILE_BYTES).decode("utf-8")
    except (LoadError, UnicodeDecodeError):
        return False  # not a regular file, too large, binary or unreadable: not text matches
    # Lines as a text-mode file gives them (universal newlines), so numbers stay the same.
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    found = False
    for number, line in enumerate(lines, 1):
        if regex.search(line):
            hits.append(f"{rel}:{number}: {line.rstrip()[:300]}")
            found = True
            if len(hits) >= MAX_SEARCH_RESULTS:
                break
    return found


def _positive_int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolFailure(f"{name} must be a positive integer", code="TOOL023")
    return value
