"""A span's label, as ``rein runs trace`` prints it, from an SDK span's stable name and its
attributes (the names hold no ids; the attributes do)."""

from __future__ import annotations

from typing import Any


def label(span: Any) -> str:
    a = span.attributes
    match span.name:
        case "run":
            return f"run {a['rein.graph_id']}"
        case "node":
            return f"node {a['rein.node']}"
        case "attempt":
            return f"attempt {a['rein.node']} #{a['rein.attempt']}"
        case "map item" | "loop iteration":
            return f"{span.name} {a['rein.node']}[{a['rein.index']}]"
    return str(span.name)
