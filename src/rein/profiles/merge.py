"""``extends`` inheritance (OAP §4, L3-E1): how a child profile composes with its bases.

Bases apply left to right, the child last. Objects deep-merge with the later document
winning; arrays replace wholesale; an explicit ``null`` deletes the key; ``metadata.name``,
``id``, ``revision`` and ``trust`` are never inherited, nor are ``state`` and ``history``;
``extends`` itself is not carried into the result. Narrowing applies to the merged result,
never to the layers (L3-E2): that is :mod:`rein.profiles.effective`'s job.

The schema makes ``null`` unusable in practice (a child is validated before the merge and
every typed field refuses null, research J-4); the rule is still implemented for when a
schema revision allows it.
"""

from __future__ import annotations

import copy
from typing import Any

_NEVER_INHERITED_METADATA = ("name", "id", "revision", "trust")
_NEVER_INHERITED = ("state", "history", "extends")


def deep_merge(base: Any, child: Any) -> Any:
    """``child`` over ``base``: objects merge, arrays and scalars replace, None deletes."""
    if isinstance(base, dict) and isinstance(child, dict):
        out = {k: copy.deepcopy(v) for k, v in base.items()}
        for key, value in child.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = deep_merge(out[key], value)
            else:
                out[key] = copy.deepcopy(value)
        return out
    return copy.deepcopy(child)


def inheritable(base: dict[str, Any]) -> dict[str, Any]:
    """What of a resolved base a child may inherit."""
    out = {k: v for k, v in base.items() if k not in _NEVER_INHERITED}
    metadata = dict(out.get("metadata") or {})
    for key in _NEVER_INHERITED_METADATA:
        metadata.pop(key, None)
    out["metadata"] = metadata
    return out


def merge_chain(bases: list[dict[str, Any]], child: dict[str, Any]) -> dict[str, Any]:
    """The merged document: each base (already resolved) left to right, then the child."""
    merged: dict[str, Any] = {}
    for base in bases:
        merged = deep_merge(merged, inheritable(base))
    own = {k: v for k, v in child.items() if k != "extends"}
    merged = deep_merge(merged, own)
    for key in ("state", "history"):
        if key in child:
            merged[key] = copy.deepcopy(child[key])
        else:
            merged.pop(key, None)
    return merged
