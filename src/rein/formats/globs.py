"""Name patterns for tools, hosts and models, and containment for workspace paths.

The OAP spec leaves the glob dialect open. rein uses the one that keeps MCP names
(``mcp/<server>/<tool>``) safe: ``*`` and ``?`` never cross a ``/``, ``**`` crosses
anything. So ``mcp/github/*`` selects one server's tools and ``mcp/*`` selects nothing
but single-segment names under ``mcp/``.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterable

# Stands for "any run that may contain a slash" when a pattern is read as a name.
_ANY_DEEP = "\x00/\x00"


@functools.lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def match(pattern: str, name: str) -> bool:
    """Whether ``name`` matches ``pattern``."""
    if pattern == name:
        return True
    return _compile(pattern).match(name) is not None


def match_any(patterns: Iterable[str], name: str) -> bool:
    """Whether ``name`` matches one of ``patterns``."""
    return any(match(p, name) for p in patterns)


def covers(general: str, specific: str) -> bool:
    """Whether every name ``specific`` matches is also matched by ``general`` (conservative).

    ``specific`` is read as a name in which ``**`` may hide a slash, so only a ``**`` in
    ``general`` can cover it. A ``False`` may be a missed cover, never a wrong one.
    """
    if general == specific:
        return True
    return match(general, specific.replace("**", _ANY_DEEP))


def normalize_relative(path: str) -> str:
    """A workspace-relative path in normal form: ``./src/`` → ``src``, ``.`` stays ``.``."""
    norm = posixpath.normpath(path.replace("\\", "/"))
    return "." if norm in ("", ".") else norm


def path_within(root: str, path: str) -> bool:
    """Whether the workspace-relative ``path`` lies inside the workspace-relative ``root``."""
    root, path = normalize_relative(root), normalize_relative(path)
    if root == ".":
        return not (path == ".." or path.startswith(("../", "/")))
    return path == root or path.startswith(root.rstrip("/") + "/")
