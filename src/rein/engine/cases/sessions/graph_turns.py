"""A graph turn: the user's input names an AGS graph with a ``mention`` item.

Codex's own input item ``{"type": "mention", "name": ..., "path": "release.agraph.yaml"}``
names the graph (a path relative to the thread's directory; only ``.agraph.yaml``,
``.agraph.yml`` and ``.agraph.json`` files are graphs, any other mention is left to the
model as text). The turn shows the plan as a ``plan`` item and its nodes as the steps of
``turn/plan/updated``, asks for the digest approval as a question, and runs the graph
once it is approved; the digest the person saw is the one the run is started under, so a
graph that changed in between is refused (APPROVAL_STALE), never run unseen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_SUFFIXES = (".agraph.yaml", ".agraph.yml", ".agraph.json")


def named_graph(items: Sequence[Mapping[str, Any]], cwd: Path) -> Path | None:
    """The graph a turn's input mentions, or None for a conversation turn."""
    for item in items:
        path = item.get("path")
        if item.get("type") == "mention" and isinstance(path, str) and \
                path.endswith(_SUFFIXES):
            return (cwd / path).resolve()
    return None


def summary(prepared: Any) -> dict[str, Any]:
    """What a graph turn records and shows before it runs: id, digest, nodes, the plan."""
    from rein.formats.ags.render import render_text

    return {"id": str(prepared.data.get("id")), "digest": prepared.digest,
            "nodes": [str(n) for n in (prepared.data.get("nodes") or {})],
            "plan": render_text(prepared.plan)}
