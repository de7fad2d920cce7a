"""JSON Pointers (RFC 6901): build, escape and resolve them.

Where a pointer sits in a document's text is :mod:`rein.formats.locations`, which needs
PyYAML's event parser; this module needs nothing, so the plan and the engine import it on
every command without the YAML parser.
"""

from __future__ import annotations

from typing import Any

__all__ = ["escape", "pointer", "resolve_pointer", "unescape"]


def escape(token: str) -> str:
    """Escape one JSON Pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str | int) -> str:
    """Build a JSON Pointer from tokens: ``pointer("nodes", "a", "inputs")``."""
    return "".join("/" + escape(str(t)) for t in tokens)


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def resolve_pointer(data: Any, ptr: str) -> Any:
    """The value at a JSON Pointer; raises KeyError when absent."""
    if not ptr:
        return data
    value = data
    for raw in ptr[1:].split("/"):
        token = unescape(raw)
        if isinstance(value, dict):
            value = value[token]
        elif isinstance(value, list) and token.isdigit():
            value = value[int(token)]
        else:
            raise KeyError(ptr)
    return value
